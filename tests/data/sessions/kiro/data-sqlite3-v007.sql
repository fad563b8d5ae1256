-- Kiro CLI / Amazon Q Developer CLI data.sqlite3, as its migrations write it
-- (crates/chat-cli/src/database/sqlite_migrations/); rusqlite's default
-- rollback journal.
CREATE TABLE IF NOT EXISTS migrations (
    id INTEGER PRIMARY KEY,
    version INTEGER NOT NULL,
    migration_time INTEGER NOT NULL
);
INSERT INTO migrations (version, migration_time) VALUES (0, 1764061200);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY,
    command TEXT,
    shell TEXT,
    pid INTEGER,
    session_id TEXT,
    cwd TEXT,
    time INTEGER,
    in_ssh INTEGER,
    in_docker INTEGER,
    hostname TEXT,
    exit_code INTEGER
);
INSERT INTO migrations (version, migration_time) VALUES (1, 1764147600);
ALTER TABLE history DROP COLUMN in_ssh;
ALTER TABLE history DROP COLUMN in_docker;
INSERT INTO migrations (version, migration_time) VALUES (2, 1764234000);
ALTER TABLE history RENAME COLUMN time TO start_time;
ALTER TABLE history ADD COLUMN end_time INTEGER;
ALTER TABLE history ADD COLUMN duration INTEGER;
INSERT INTO migrations (version, migration_time) VALUES (3, 1764320400);
CREATE TABLE state (
    key TEXT PRIMARY KEY,
    value TEXT
);
INSERT INTO migrations (version, migration_time) VALUES (4, 1764406800);
CREATE TABLE auth_kv (
    key TEXT PRIMARY KEY,
    value TEXT
);
INSERT INTO migrations (version, migration_time) VALUES (5, 1764493200);
ALTER TABLE state RENAME TO state_old;
CREATE TABLE state (
    key TEXT PRIMARY KEY,
    value BLOB
);
INSERT INTO state SELECT key, value FROM state_old;
DROP TABLE state_old;
INSERT INTO migrations (version, migration_time) VALUES (6, 1764579600);
CREATE TABLE conversations (
    key TEXT PRIMARY KEY,
    value TEXT
);
INSERT INTO migrations (version, migration_time) VALUES (7, 1764666000);

INSERT INTO `conversations` (`key`, `value`) VALUES ('/home/dev/ferry', '{"conversation_id":"0b7c4e2a-91d3-4f58-a6e0-3c2d8b5f1a47","next_message":null,"history":[[{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"Prompt":{"prompt":"Confirm the relay still listens on port 47213 and read its archive settings again."}},"timestamp":"2025-12-05T09:10:00.000000+00:00","images":null},{"ToolUse":{"message_id":"a1","content":"Reading relay.toml.","tool_uses":[{"id":"tooluse_K7a","name":"fs_read","orig_name":"fs_read","args":{"operations":[{"mode":"Line","path":"/home/dev/ferry/relay.toml"}]},"orig_args":{"operations":[{"mode":"Line","path":"/home/dev/ferry/relay.toml"}]}}]}}],[{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"ToolUseResults":{"tool_use_results":[{"tool_use_id":"tooluse_K7a","content":[{"Text":"[archive]\nbucket = \"ferry-archive-w3\"\nregion = \"eu-west-1\"\n\n[relay]\nport = 47213"}],"status":"Success"}]}},"timestamp":"2025-12-05T09:11:00.000000+00:00","images":null},{"Response":{"message_id":"a2","content":"It writes to ferry-archive-w3."}}],[{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"Prompt":{"prompt":"Skip the diagram. Tag the release v4.2.7-ferry."}},"timestamp":"2025-12-05T09:12:00.000000+00:00","images":null},{"ToolUse":{"message_id":"a3","content":"","tool_uses":[{"id":"tooluse_K7b","name":"execute_bash","orig_name":"execute_bash","args":{"command":"git tag v4.2.7-ferry"},"orig_args":{"command":"git tag v4.2.7-ferry"}}]}}],[{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"ToolUseResults":{"tool_use_results":[{"tool_use_id":"tooluse_K7b","content":[{"Json":{"exit_status":"0","stdout":"","stderr":""}}],"status":"Success"}]}},"timestamp":"2025-12-05T09:13:00.000000+00:00","images":null},{"Response":{"message_id":"a4","content":"Tagged v4.2.7-ferry."}}]],"valid_history_range":[0,4],"transcript":["> Wire the ferry relay to the archive; it listens on port 47213. Find the bucket it writes to.","Reading relay.toml.","The relay writes to ferry-archive-w3.","> /compact","> Confirm the relay still listens ...","Tagged v4.2.7-ferry."],"tools":{},"context_manager":{"max_context_files_size":150000,"current_profile":"kiro_default","paths":["AmazonQ.md","README.md"],"hooks":{}},"context_message_length":2311,"latest_summary":"## Summary\nThe ferry relay listens on port 47213. Its archive bucket is ferry-archive-w3 (relay.toml). Next: point the relay at the bucket and restart it.","model":null}');
