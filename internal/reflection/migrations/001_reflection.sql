-- Findings already reported, so a standing problem is reported once, not on
-- every trigger. The key names the rule, its subject and the newest evidence.
CREATE TABLE reflection_findings (
    key       TEXT PRIMARY KEY,
    rule      TEXT NOT NULL,
    subject   TEXT NOT NULL,
    detail    TEXT NOT NULL,
    found_at  INTEGER NOT NULL
);
