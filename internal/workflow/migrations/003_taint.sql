-- What tainted the conversation a sub-session was spawned from (untrusted
-- input; '' when nothing did): the worker inherits it, so its calls that
-- carry data out are refused (internal/approval).
ALTER TABLE workflow_nodes ADD COLUMN taint TEXT NOT NULL DEFAULT '';
