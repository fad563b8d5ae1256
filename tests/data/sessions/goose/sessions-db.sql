-- goose ~/.local/share/goose/sessions/sessions.db, as SessionStorage::create writes it
-- (crates/goose/src/session/session_manager.rs, schema v5); sqlx opens it in WAL mode.
PRAGMA journal_mode = WAL;
CREATE TABLE schema_version (
                version INTEGER PRIMARY KEY,
                applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
            );
INSERT INTO schema_version (version) VALUES (5);
CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL DEFAULT '',
                description TEXT NOT NULL DEFAULT '',
                user_set_name BOOLEAN DEFAULT FALSE,
                session_type TEXT NOT NULL DEFAULT 'user',
                working_dir TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                extension_data TEXT DEFAULT '{}',
                total_tokens INTEGER,
                input_tokens INTEGER,
                output_tokens INTEGER,
                accumulated_total_tokens INTEGER,
                accumulated_input_tokens INTEGER,
                accumulated_output_tokens INTEGER,
                schedule_id TEXT,
                recipe_json TEXT,
                user_recipe_values_json TEXT
            );
CREATE TABLE messages (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                role TEXT NOT NULL,
                content_json TEXT NOT NULL,
                created_timestamp INTEGER NOT NULL,
                timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                tokens INTEGER,
                metadata_json TEXT
            );
CREATE INDEX idx_messages_session ON messages(session_id);
CREATE INDEX idx_messages_timestamp ON messages(timestamp);
CREATE INDEX idx_sessions_updated ON sessions(updated_at DESC);
CREATE INDEX idx_sessions_type ON sessions(session_type);

INSERT INTO `sessions` (`id`, `name`, `description`, `user_set_name`, `session_type`, `working_dir`, `created_at`, `updated_at`, `extension_data`, `total_tokens`, `input_tokens`, `output_tokens`, `accumulated_total_tokens`, `accumulated_input_tokens`, `accumulated_output_tokens`, `schedule_id`, `recipe_json`, `user_recipe_values_json`) VALUES ('20251205_1', 'Spool format', '', 0, 'user', '/home/dev/ferry', '2025-12-04 09:00:00', '2025-12-04 09:01:35', '{}', 5120, 4800, 320, 9800, 9100, 700, NULL, NULL, NULL);
INSERT INTO `sessions` (`id`, `name`, `description`, `user_set_name`, `session_type`, `working_dir`, `created_at`, `updated_at`, `extension_data`, `total_tokens`, `input_tokens`, `output_tokens`, `accumulated_total_tokens`, `accumulated_input_tokens`, `accumulated_output_tokens`, `schedule_id`, `recipe_json`, `user_recipe_values_json`) VALUES ('20251205_2', 'Wire the ferry relay', '', 0, 'user', '/home/dev/ferry', '2025-12-05 09:00:00', '2025-12-05 09:01:35', '{}', 5120, 4800, 320, 9800, 9100, 700, NULL, NULL, NULL);
INSERT INTO `sessions` (`id`, `name`, `description`, `user_set_name`, `session_type`, `working_dir`, `created_at`, `updated_at`, `extension_data`, `total_tokens`, `input_tokens`, `output_tokens`, `accumulated_total_tokens`, `accumulated_input_tokens`, `accumulated_output_tokens`, `schedule_id`, `recipe_json`, `user_recipe_values_json`) VALUES ('20251205_3', 'subagent: find the bucket', '', 0, 'sub_agent', '/home/dev/ferry', '2025-12-05 09:00:04', '2025-12-05 09:01:39', '{}', 5120, 4800, 320, 9800, 9100, 700, NULL, NULL, NULL);
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_1', 'user', '[{"type":"text","text":"Explain the spool format."}]', 1764838800, '2025-12-04 09:00:00', NULL, '{"userVisible":true,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'user', '[{"type":"text","text":"Wire the ferry relay to the archive; it listens on port 47213. Find the bucket it writes to."}]', 1764925200, '2025-12-05 09:00:00', NULL, '{"userVisible":true,"agentVisible":false}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'assistant', '[{"type":"thinking","thinking":"The relay config should name the bucket.","signature":"EqQBCkYIBxgCKkA"},{"type":"text","text":"Reading the relay config."},{"type":"toolRequest","id":"toolu_03A","toolCall":{"status":"success","value":{"name":"developer__text_editor","arguments":{"command":"view","path":"/home/dev/ferry/relay.toml"}}}}]', 1764925202, '2025-12-05 09:00:02', NULL, '{"userVisible":true,"agentVisible":false}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'user', '[{"type":"toolResponse","id":"toolu_03A","toolResult":{"status":"success","value":{"content":[{"type":"text","text":"[archive]\nbucket = \"ferry-archive-w3\"\nregion = \"eu-west-1\"\n\n[relay]\nport = 47213"}],"isError":false}}}]', 1764925203, '2025-12-05 09:00:03', NULL, '{"userVisible":true,"agentVisible":false}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'assistant', '[{"type":"text","text":"The relay writes to ferry-archive-w3."}]', 1764925205, '2025-12-05 09:00:05', NULL, '{"userVisible":true,"agentVisible":false}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'user', '[{"type":"text","text":"## Summary\nThe ferry relay listens on port 47213. Its archive bucket is ferry-archive-w3 (relay.toml). Next: point the relay at the bucket and restart it."}]', 1764925260, '2025-12-05 09:01:00', NULL, '{"userVisible":false,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'assistant', '[{"type":"text","text":"Your context was compacted at the user''s request. The previous message contains a summary of the conversation so far.\nDo not mention that you read a summary or that conversation summarization occurred.\nJust continue the conversation naturally based on the summarized context."}]', 1764925260, '2025-12-05 09:01:00', NULL, '{"userVisible":false,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'user', '[{"type":"systemNotification","notificationType":"inlineMessage","msg":"Compaction complete"}]', 1764925261, '2025-12-05 09:01:01', NULL, '{"userVisible":true,"agentVisible":false}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'user', '[{"type":"text","text":"Skip the diagram. Tag the release v4.2.7-ferry."}]', 1764925290, '2025-12-05 09:01:30', NULL, '{"userVisible":true,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'assistant', '[{"type":"toolRequest","id":"toolu_03B","toolCall":{"status":"success","value":{"name":"developer__shell","arguments":{"command":"git tag v4.2.7-ferry"}}}}]', 1764925292, '2025-12-05 09:01:32', NULL, '{"userVisible":true,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'user', '[{"type":"toolResponse","id":"toolu_03B","toolResult":{"status":"success","value":[{"type":"text","text":""}]}}]', 1764925293, '2025-12-05 09:01:33', NULL, '{"userVisible":true,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_2', 'assistant', '[{"type":"text","text":"Tagged v4.2.7-ferry."}]', 1764925295, '2025-12-05 09:01:35', NULL, '{"userVisible":true,"agentVisible":true}');
INSERT INTO `messages` (`session_id`, `role`, `content_json`, `created_timestamp`, `timestamp`, `tokens`, `metadata_json`) VALUES ('20251205_3', 'user', '[{"type":"text","text":"Find the archive bucket."}]', 1764925204, '2025-12-05 09:00:04', NULL, '{"userVisible":true,"agentVisible":true}');
