-- An edit of a memory's text closes the old row (valid_to) and inserts the
-- new version; superseded_by links the closed row to that successor, so a
-- memory's history can be followed. NULL for current memories and for
-- memories closed without a successor (dreaming's consolidations).
ALTER TABLE memories ADD COLUMN superseded_by INTEGER;
