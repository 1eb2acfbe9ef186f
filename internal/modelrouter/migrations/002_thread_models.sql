-- The model chosen per conversation (the web page's model picker) and the
-- conversation's token use on its main-role calls.
CREATE TABLE thread_models (
    thread            TEXT    PRIMARY KEY,
    backend           TEXT    NOT NULL DEFAULT '', -- '' = the main role's backends
    last_input_tokens INTEGER NOT NULL DEFAULT 0,  -- input of the newest call: the context in use
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    calls             INTEGER NOT NULL DEFAULT 0,
    updated_at        INTEGER NOT NULL
);
