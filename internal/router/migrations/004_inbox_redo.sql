-- Regenerations, retries and edits (kinds 'regenerate', 'retry', 'edit')
-- wait in the inbox like messages; target_message_id is the user message an
-- edit replaces (0 for the others).
ALTER TABLE router_inbox ADD COLUMN target_message_id INTEGER NOT NULL DEFAULT 0;
