-- Attachments of an inbound message: a JSON array of {kind, path,
-- media_type} (files the channel saved in the workspace); '' for none.
ALTER TABLE router_inbox ADD COLUMN attachments TEXT NOT NULL DEFAULT '';
