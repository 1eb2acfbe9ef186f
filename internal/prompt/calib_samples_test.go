package prompt

// calibrationSamples are texts of different kinds, written for this test,
// on which the Estimator is checked against cl100k_base.
var calibrationSamples = map[string]string{
	"english": `The assistant keeps a working list of what is in progress and remembers what matters about you. ` +
		`When a conversation grows too long for the model's context window, older messages are summarised ` +
		`and archived, while the ten most recent messages stay intact. Every night, a consolidation pass ` +
		`merges duplicate memories, resolves contradictions and prunes entries that nobody has used for months. ` +
		`If you ask it to remind you of something tomorrow at nine, it schedules a reminder and tells you so.`,
	"code": "func (s *Store) History(ctx context.Context, id chat.ThreadID) ([]StoredMessage, error) {\n" +
		"\trows, err := s.db.QueryContext(ctx, `SELECT id, role FROM messages WHERE thread_id = ?`, string(id))\n" +
		"\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"read history of %q: %w\", id, err)\n\t}\n" +
		"\tdefer rows.Close()\n\tvar out []StoredMessage\n\tfor rows.Next() {\n\t\tvar m StoredMessage\n" +
		"\t\tif err := rows.Scan(&m.ID, &m.Role); err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\tout = append(out, m)\n\t}\n" +
		"\treturn out, rows.Err()\n}\n",
	"json": `{"decision": "merge", "entries": [{"id": 4182, "text": "Prefers tea over coffee", "source": "user_explicit", ` +
		`"access_count": 12, "last_accessed": "2025-01-15T14:32:00Z"}, {"id": 4190, "text": "Drinks green tea in the ` +
		`morning", "source": "harvest", "access_count": 3, "score": 0.8731}], "reason": "same preference"}`,
	"german": `Der Assistent merkt sich, was dir wichtig ist, und führt eine Liste der laufenden Aufgaben. ` +
		`Wenn ein Gespräch zu lang für das Kontextfenster des Modells wird, werden ältere Nachrichten ` +
		`zusammengefasst und archiviert. Jede Nacht werden doppelte Erinnerungen zusammengeführt, ` +
		`Widersprüche aufgelöst und Einträge entfernt, die seit Monaten niemand benutzt hat. Grüße aus München!`,
	"markdown": "# Skill: deploy the blog\n\nDeploys the static blog to the VPS.\n\n1. Run `hugo --minify` in `~/blog`.\n" +
		"2. Sync with `rsync -avz --delete public/ web@203.0.113.7:/srv/blog/`.\n3. Check https://blog.example.org/ returns 200.\n\n" +
		"- If rsync fails with *permission denied*, ask the user to re-add the SSH key.\n- Never delete `/srv/blog/uploads`.\n",
	"numbers": "2025-01-15 14:32:07, 3.14159, 42, 1000000, 192.168.1.1, +49 30 1234567, [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]",
	"chinese": "助手会记住对你重要的事情，并维护一份正在进行的工作清单。当对话对于模型的上下文窗口来说太长时，较早的消息会被总结并归档。",
	"russian": "Ассистент запоминает то, что для вас важно, и ведёт список текущих дел. Каждую ночь он объединяет повторяющиеся воспоминания.",
}
