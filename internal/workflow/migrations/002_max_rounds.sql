-- A spawn may bound its worker's rounds of tool calls (0: the default).
ALTER TABLE workflow_nodes ADD COLUMN max_rounds INTEGER NOT NULL DEFAULT 0;
