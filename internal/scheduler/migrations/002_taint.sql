-- What tainted the conversation an AI task was set from (untrusted input;
-- '' when nothing did): its run inherits it (internal/approval).
ALTER TABLE scheduler_tasks ADD COLUMN taint TEXT NOT NULL DEFAULT '';
