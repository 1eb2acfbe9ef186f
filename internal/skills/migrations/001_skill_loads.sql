-- Which skills were in which session's prompt, and how: full text, the
-- table of contents only, or opened with read_skill. At most one row per
-- (thread, skill, mode, UTC day); loaded_at is the first load that day, in
-- unix nanoseconds. The reflection cycle correlates skills with failed
-- sessions from it.
CREATE TABLE skill_loads (
    thread    TEXT    NOT NULL,
    skill     TEXT    NOT NULL,
    mode      TEXT    NOT NULL CHECK (mode IN ('full', 'toc', 'read')),
    day       TEXT    NOT NULL,
    loaded_at INTEGER NOT NULL,
    PRIMARY KEY (thread, skill, mode, day)
) WITHOUT ROWID;

CREATE INDEX skill_loads_at ON skill_loads (loaded_at);
CREATE INDEX skill_loads_skill ON skill_loads (skill, loaded_at);
