CREATE TABLE model_usage (
    day           TEXT    NOT NULL,             -- UTC date, YYYY-MM-DD
    role          TEXT    NOT NULL,
    backend       TEXT    NOT NULL,
    model         TEXT    NOT NULL,
    calls         INTEGER NOT NULL DEFAULT 0,
    failures      INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, role, backend, model)
);
