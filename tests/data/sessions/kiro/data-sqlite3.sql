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
CREATE TABLE conversations_v2 (
    key TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at INTEGER NOT NULL,  -- Unix timestamp in milliseconds
    updated_at INTEGER NOT NULL,  -- Unix timestamp in milliseconds
    PRIMARY KEY (key, conversation_id)
);

CREATE INDEX idx_conversations_v2_key_updated ON conversations_v2(key, updated_at DESC);
CREATE INDEX idx_conversations_v2_updated_at ON conversations_v2(updated_at DESC);

INSERT INTO conversations_v2 (key, conversation_id, value, created_at, updated_at)
SELECT
    key,
    json_extract(value, '$.conversation_id') as conversation_id,
    value,
    CAST(strftime('%s', 'now') AS INTEGER) * 1000 as created_at,
    CAST(strftime('%s', 'now') AS INTEGER) * 1000 as updated_at
FROM conversations;
INSERT INTO migrations (version, migration_time) VALUES (8, 1764752400);

INSERT INTO `conversations_v2` (`key`, `conversation_id`, `value`, `created_at`, `updated_at`) VALUES ('/home/dev/spool', '5e1f0a9c-2b7d-4c36-8e4a-9d0f1b2c3e5a', '{"conversation_id":"5e1f0a9c-2b7d-4c36-8e4a-9d0f1b2c3e5a","next_message":null,"history":[{"user":{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"Prompt":{"prompt":"Explain the spool format."}},"timestamp":"2025-12-05T09:01:00.000000+00:00","images":null},"assistant":{"Response":{"message_id":"b1","content":"Segments of 64 MiB."}},"request_metadata":null}],"valid_history_range":[0,1],"transcript":[],"tools":{},"context_manager":null,"context_message_length":null,"latest_summary":null,"file_line_tracker":{},"checkpoint_manager":null,"mcp_enabled":true}', 1764916200000, 1764917200000);
INSERT INTO `conversations_v2` (`key`, `conversation_id`, `value`, `created_at`, `updated_at`) VALUES ('/home/dev/ferry', '0b7c4e2a-91d3-4f58-a6e0-3c2d8b5f1a47', '{"conversation_id":"0b7c4e2a-91d3-4f58-a6e0-3c2d8b5f1a47","next_message":null,"history":[{"user":{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"Prompt":{"prompt":"Confirm the relay still listens on port 47213 and read its archive settings again."}},"timestamp":"2025-12-05T09:10:00.000000+00:00","images":null},"assistant":{"ToolUse":{"message_id":"a1","content":"Reading relay.toml.","tool_uses":[{"id":"tooluse_K7a","name":"fs_read","orig_name":"fs_read","args":{"operations":[{"mode":"Line","path":"/home/dev/ferry/relay.toml"}]},"orig_args":{"operations":[{"mode":"Line","path":"/home/dev/ferry/relay.toml"}]}}]}},"request_metadata":{"request_id":"9f2c7a1e-44b0-4d6c-b7e1-0a3d5c8e2f00","message_id":"1c4e8a20-7f3b-4e5d-9a61-2b0c7d9e4f00","request_start_timestamp_ms":1764925200000,"stream_end_timestamp_ms":1764925204000,"time_to_first_chunk":{"secs":1,"nanos":204000000},"time_between_chunks":[],"user_prompt_length":120,"response_size":240,"chat_conversation_type":"ToolUse","tool_use_ids_and_names":[["tooluse_K7a","fs_read"]],"model_id":"claude-sonnet-4.5","message_meta_tags":[]}},{"user":{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"ToolUseResults":{"tool_use_results":[{"tool_use_id":"tooluse_K7a","content":[{"Text":"[archive]\nbucket = \"ferry-archive-w3\"\nregion = \"eu-west-1\"\n\n[relay]\nport = 47213"}],"status":"Success"}]}},"timestamp":"2025-12-05T09:11:00.000000+00:00","images":null},"assistant":{"Response":{"message_id":"a2","content":"It writes to ferry-archive-w3."}},"request_metadata":{"request_id":"9f2c7a1e-44b0-4d6c-b7e1-0a3d5c8e2f01","message_id":"1c4e8a20-7f3b-4e5d-9a61-2b0c7d9e4f01","request_start_timestamp_ms":1764925260000,"stream_end_timestamp_ms":1764925264000,"time_to_first_chunk":{"secs":1,"nanos":204000000},"time_between_chunks":[],"user_prompt_length":120,"response_size":240,"chat_conversation_type":"NotToolUse","tool_use_ids_and_names":[],"model_id":"claude-sonnet-4.5","message_meta_tags":[]}},{"user":{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"Prompt":{"prompt":"Skip the diagram. Tag the release v4.2.7-ferry."}},"timestamp":"2025-12-05T09:12:00.000000+00:00","images":null},"assistant":{"ToolUse":{"message_id":"a3","content":"","tool_uses":[{"id":"tooluse_K7b","name":"execute_bash","orig_name":"execute_bash","args":{"command":"git tag v4.2.7-ferry"},"orig_args":{"command":"git tag v4.2.7-ferry"}}]}},"request_metadata":{"request_id":"9f2c7a1e-44b0-4d6c-b7e1-0a3d5c8e2f02","message_id":"1c4e8a20-7f3b-4e5d-9a61-2b0c7d9e4f02","request_start_timestamp_ms":1764925320000,"stream_end_timestamp_ms":1764925324000,"time_to_first_chunk":{"secs":1,"nanos":204000000},"time_between_chunks":[],"user_prompt_length":120,"response_size":240,"chat_conversation_type":"ToolUse","tool_use_ids_and_names":[["tooluse_K7b","execute_bash"]],"model_id":"claude-sonnet-4.5","message_meta_tags":[]}},{"user":{"additional_context":"--- CONTEXT ENTRY BEGIN ---\nThis section (like others) contains important information ...\n--- CONTEXT ENTRY END ---\n\n","env_context":{"env_state":{"operating_system":"linux","current_working_directory":"/home/dev/ferry","environment_variables":[]}},"content":{"ToolUseResults":{"tool_use_results":[{"tool_use_id":"tooluse_K7b","content":[{"Json":{"exit_status":"0","stdout":"","stderr":""}}],"status":"Success"}]}},"timestamp":"2025-12-05T09:13:00.000000+00:00","images":null},"assistant":{"Response":{"message_id":"a4","content":"Tagged v4.2.7-ferry."}},"request_metadata":{"request_id":"9f2c7a1e-44b0-4d6c-b7e1-0a3d5c8e2f03","message_id":"1c4e8a20-7f3b-4e5d-9a61-2b0c7d9e4f03","request_start_timestamp_ms":1764925380000,"stream_end_timestamp_ms":1764925384000,"time_to_first_chunk":{"secs":1,"nanos":204000000},"time_between_chunks":[],"user_prompt_length":120,"response_size":240,"chat_conversation_type":"NotToolUse","tool_use_ids_and_names":[],"model_id":"claude-sonnet-4.5","message_meta_tags":[]}}],"valid_history_range":[0,4],"transcript":["> Wire the ferry relay to the archive; it listens on port 47213. Find the bucket it writes to.","Reading relay.toml.","The relay writes to ferry-archive-w3.","> /compact","> Confirm the relay still listens ...","Tagged v4.2.7-ferry."],"tools":{},"context_manager":{"max_context_files_size":150000,"current_profile":"kiro_default","paths":["AmazonQ.md","README.md"],"hooks":{}},"context_message_length":2311,"latest_summary":["## Summary\nThe ferry relay listens on port 47213. Its archive bucket is ferry-archive-w3 (relay.toml). Next: point the relay at the bucket and restart it.",{"request_id":"9f2c7a1e-44b0-4d6c-b7e1-0a3d5c8e2f09","message_id":"1c4e8a20-7f3b-4e5d-9a61-2b0c7d9e4f09","request_start_timestamp_ms":1764925740000,"stream_end_timestamp_ms":1764925744000,"time_to_first_chunk":{"secs":1,"nanos":204000000},"time_between_chunks":[],"user_prompt_length":120,"response_size":240,"chat_conversation_type":"NotToolUse","tool_use_ids_and_names":[],"model_id":"claude-sonnet-4.5","message_meta_tags":[]}],"model_info":{"model_name":"claude-sonnet-4.5","model_id":"claude-sonnet-4.5","context_window_tokens":200000},"file_line_tracker":{},"checkpoint_manager":null,"mcp_enabled":true}', 1764925200000, 1764926000000);
