-- Who wrote a message: '' for the conversation itself (the user, the
-- assistant, tools), 'system_event' for events raised for the agent
-- (reminders, worker results, condense requests, supervisor notes) and
-- 'seed' for the opening of a new conversation. Both are stored with the
-- user role so that every provider accepts them; before this column they
-- were told apart by their "[SYSTEM EVENT]" text prefix, which a user could
-- type too. Existing rows are classified by that prefix once.
ALTER TABLE messages ADD COLUMN source TEXT NOT NULL DEFAULT '';

UPDATE messages SET source = 'system_event'
 WHERE role = 'user'
   AND COALESCE(json_extract(parts, '$[0].text'), '') LIKE '[SYSTEM EVENT]%';
