-- OpenCode 1.x ~/.local/share/opencode/opencode.db, as its drizzle migrations create it
-- (packages/opencode/migration/, packages/opencode/src/session/session.sql.ts); WAL mode.
PRAGMA journal_mode = WAL;
CREATE TABLE `project` (
	`id` text PRIMARY KEY,
	`worktree` text NOT NULL,
	`vcs` text,
	`name` text,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL
);
CREATE TABLE `session` (
	`id` text PRIMARY KEY,
	`project_id` text NOT NULL,
	`parent_id` text,
	`slug` text NOT NULL,
	`directory` text NOT NULL,
	`title` text NOT NULL,
	`version` text NOT NULL,
	`share_url` text,
	`summary_additions` integer,
	`summary_deletions` integer,
	`summary_files` integer,
	`summary_diffs` text,
	`revert` text,
	`permission` text,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_compacting` integer,
	`time_archived` integer,
	`workspace_id` text,
	`path` text,
	`agent` text,
	`model` text,
	CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`)
		REFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE TABLE `message` (
	`id` text PRIMARY KEY,
	`session_id` text NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`data` text NOT NULL,
	CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`)
		REFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE TABLE `part` (
	`id` text PRIMARY KEY,
	`message_id` text NOT NULL,
	`session_id` text NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`data` text NOT NULL,
	CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`)
		REFERENCES `message`(`id`) ON DELETE CASCADE
);
CREATE TABLE `todo` (
	`session_id` text NOT NULL,
	`content` text NOT NULL,
	`status` text NOT NULL,
	`priority` text NOT NULL,
	`position` integer NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	CONSTRAINT `todo_pk` PRIMARY KEY(`session_id`, `position`)
);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);

-- OpenCode 2.x adds, beside the 1.x tables it leaves as they were:
CREATE TABLE `session_v2` (
	`id` text PRIMARY KEY,
	`project_id` text NOT NULL,
	`parent_id` text,
	`slug` text NOT NULL,
	`directory` text NOT NULL,
	`title` text NOT NULL,
	`version` text NOT NULL,
	`agent` text,
	`model` text,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`time_compacting` integer,
	`time_archived` integer
);
CREATE TABLE `session_message` (
	`id` text PRIMARY KEY,
	`session_id` text NOT NULL,
	`type` text NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	`data` text NOT NULL
);
CREATE INDEX `session_message_session_idx` ON `session_message` (`session_id`);
CREATE INDEX `session_message_session_type_idx` ON `session_message` (`session_id`,`type`);
CREATE INDEX `session_message_time_created_idx` ON `session_message` (`time_created`);

INSERT INTO `project` (`id`, `worktree`, `vcs`, `name`, `time_created`, `time_updated`) VALUES ('4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e', '/home/dev/ferry', 'git', NULL, 1764835200000, 1764925200000);
INSERT INTO `session` (`id`, `project_id`, `parent_id`, `slug`, `directory`, `title`, `version`, `share_url`, `summary_additions`, `summary_deletions`, `summary_files`, `summary_diffs`, `revert`, `permission`, `time_created`, `time_updated`, `time_compacting`, `time_archived`) VALUES ('ses_1d2e0a9b8c7dHn3Jk5Lm8Np2Qr6t', '4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e', NULL, 'spool-format', '/home/dev/ferry', 'Spool format', '1.0.12', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1764838800000, 1764838891000, NULL, NULL);
INSERT INTO `session` (`id`, `project_id`, `parent_id`, `slug`, `directory`, `title`, `version`, `share_url`, `summary_additions`, `summary_deletions`, `summary_files`, `summary_diffs`, `revert`, `permission`, `time_created`, `time_updated`, `time_compacting`, `time_archived`) VALUES ('ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', '4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e', NULL, 'wire-the-ferry-relay', '/home/dev/ferry', 'Wire the ferry relay', '1.0.12', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1764925200000, 1764925291000, NULL, NULL);
INSERT INTO `session` (`id`, `project_id`, `parent_id`, `slug`, `directory`, `title`, `version`, `share_url`, `summary_additions`, `summary_deletions`, `summary_files`, `summary_diffs`, `revert`, `permission`, `time_created`, `time_updated`, `time_compacting`, `time_archived`) VALUES ('ses_1d2e4b1c2d3eTs9Uv1Wx3Yz5Ab7c', '4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 'find-the-bucket-(@general-subagent)', '/home/dev/ferry', 'Find the bucket (@general subagent)', '1.0.12', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1764925201200, 1764925292200, NULL, NULL);
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000384Qm7Rt2VxK9pLwN', 'ses_1d2e0a9b8c7dHn3Jk5Lm8Np2Qr6t', 1764838800000, 1764838804000, '{"role":"user","time":{"created":1764838800000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000384017Rt2VxK9pLwN', 'msg_1d2e3f000384Qm7Rt2VxK9pLwN', 'ses_1d2e0a9b8c7dHn3Jk5Lm8Np2Qr6t', 1764838800001, 1764838800001, '{"type":"text","text":"Explain the spool format."}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000001Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925200000, 1764925204000, '{"role":"user","time":{"created":1764925200000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000001017Rt2VxK9pLwN', 'msg_1d2e3f000001Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925200001, 1764925200001, '{"type":"text","text":"Wire the ferry relay to the archive; it listens on port 47213. Find the bucket it writes to."}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201000, 1764925205000, '{"role":"assistant","time":{"created":1764925201000,"completed":1764925205000},"parentID":"msg_1d2e3f000001Qm7Rt2VxK9pLwN","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/ferry","root":"/home/dev/ferry"},"cost":0.0123,"tokens":{"input":1200,"output":85,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"tool-calls"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002017Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201001, 1764925201001, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002027Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201002, 1764925201002, '{"type":"reasoning","text":"The relay config should name the bucket.","time":{"start":1764925201100,"end":1764925201300}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002037Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201003, 1764925201003, '{"type":"text","text":"Listing the spool first."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002047Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201004, 1764925201004, '{"type":"tool","callID":"toolu_01A","tool":"bash","state":{"status":"completed","input":{"command":"ls /srv/ferry/spool","description":"List the spool"},"output":"segment-0001.bin\nsegment-0002.bin","title":"List the spool","metadata":{},"time":{"start":1764925201400,"end":1764925202300,"compacted":1764925260000}}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002057Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201005, 1764925201005, '{"type":"step-finish","reason":"tool-calls","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002067Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201006, 1764925201006, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002077Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201007, 1764925201007, '{"type":"text","text":"Now the relay config."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002087Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201008, 1764925201008, '{"type":"tool","callID":"toolu_01B","tool":"read","state":{"status":"completed","input":{"filePath":"/home/dev/ferry/relay.toml"},"output":"[archive]\nbucket = \"ferry-archive-w3\"\nregion = \"eu-west-1\"\n\n[relay]\nport = 47213","title":"relay.toml","metadata":{},"time":{"start":1764925202500,"end":1764925203400}}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002097Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201009, 1764925201009, '{"type":"step-finish","reason":"tool-calls","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002107Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201010, 1764925201010, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002117Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201011, 1764925201011, '{"type":"text","text":"The relay writes to ferry-archive-w3."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002127Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201012, 1764925201012, '{"type":"patch","hash":"9a1b2c3d","files":["/home/dev/ferry/relay.toml"]}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000002137Rt2VxK9pLwN', 'msg_1d2e3f000002Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925201013, 1764925201013, '{"type":"step-finish","reason":"stop","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000003Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925250000, 1764925254000, '{"role":"user","time":{"created":1764925250000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000003017Rt2VxK9pLwN', 'msg_1d2e3f000003Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925250001, 1764925250001, '{"type":"compaction","auto":true}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000004Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925250500, 1764925254500, '{"role":"assistant","time":{"created":1764925250500,"completed":1764925254500},"parentID":"msg_1d2e3f000003Qm7Rt2VxK9pLwN","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"compaction","agent":"compaction","path":{"cwd":"/home/dev/ferry","root":"/home/dev/ferry"},"cost":0.0123,"tokens":{"input":1200,"output":85,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop","summary":true}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000004017Rt2VxK9pLwN', 'msg_1d2e3f000004Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925250501, 1764925250501, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000004027Rt2VxK9pLwN', 'msg_1d2e3f000004Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925250502, 1764925250502, '{"type":"text","text":"## Summary\nThe ferry relay listens on port 47213. Its archive bucket is ferry-archive-w3 (relay.toml). Next: point the relay at the bucket and restart it."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000004037Rt2VxK9pLwN', 'msg_1d2e3f000004Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925250503, 1764925250503, '{"type":"step-finish","reason":"stop","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000005Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925256000, 1764925260000, '{"role":"user","time":{"created":1764925256000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000005017Rt2VxK9pLwN', 'msg_1d2e3f000005Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925256001, 1764925256001, '{"type":"text","text":"Continue if you have next steps","synthetic":true}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000006Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925256500, 1764925260500, '{"role":"assistant","time":{"created":1764925256500,"completed":1764925260500},"parentID":"msg_1d2e3f000005Qm7Rt2VxK9pLwN","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/ferry","root":"/home/dev/ferry"},"cost":0.0123,"tokens":{"input":1200,"output":85,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000006017Rt2VxK9pLwN', 'msg_1d2e3f000006Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925256501, 1764925256501, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000006027Rt2VxK9pLwN', 'msg_1d2e3f000006Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925256502, 1764925256502, '{"type":"text","text":"The relay is wired; waiting for the tag."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000006037Rt2VxK9pLwN', 'msg_1d2e3f000006Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925256503, 1764925256503, '{"type":"step-finish","reason":"stop","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000007Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925290000, 1764925294000, '{"role":"user","time":{"created":1764925290000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000007017Rt2VxK9pLwN', 'msg_1d2e3f000007Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925290001, 1764925290001, '{"type":"text","text":"Skip the diagram. Tag the release v4.2.7-ferry."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000007027Rt2VxK9pLwN', 'msg_1d2e3f000007Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925290002, 1764925290002, '{"type":"agent","name":"build","source":{"value":"@build","start":0,"end":6}}');
INSERT INTO `message` (`id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291000, 1764925295000, '{"role":"assistant","time":{"created":1764925291000,"completed":1764925295000},"parentID":"msg_1d2e3f000007Qm7Rt2VxK9pLwN","modelID":"claude-sonnet-4-5","providerID":"anthropic","mode":"build","agent":"build","path":{"cwd":"/home/dev/ferry","root":"/home/dev/ferry"},"cost":0.0123,"tokens":{"input":1200,"output":85,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000008017Rt2VxK9pLwN', 'msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291001, 1764925291001, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000008027Rt2VxK9pLwN', 'msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291002, 1764925291002, '{"type":"tool","callID":"toolu_01C","tool":"bash","state":{"status":"completed","input":{"command":"git tag v4.2.7-ferry","description":"Tag the release"},"output":"","title":"Tag the release","metadata":{},"time":{"start":1764925291200,"end":1764925292100}}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000008037Rt2VxK9pLwN', 'msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291003, 1764925291003, '{"type":"step-finish","reason":"tool-calls","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000008047Rt2VxK9pLwN', 'msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291004, 1764925291004, '{"type":"step-start","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567"}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000008057Rt2VxK9pLwN', 'msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291005, 1764925291005, '{"type":"text","text":"Tagged v4.2.7-ferry."}');
INSERT INTO `part` (`id`, `message_id`, `session_id`, `time_created`, `time_updated`, `data`) VALUES ('prt_1d2e3f000008067Rt2VxK9pLwN', 'msg_1d2e3f000008Qm7Rt2VxK9pLwN', 'ses_1d2e3f4a5b6cQm7Rt2VxK9pLwN4s', 1764925291006, 1764925291006, '{"type":"step-finish","reason":"stop","snapshot":"9a1b2c3d4e5f60718293a4b5c6d7e8f901234567","cost":0.0061,"tokens":{"input":600,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO `session_v2` (`id`, `project_id`, `parent_id`, `slug`, `directory`, `title`, `time_created`, `time_updated`, `time_compacting`, `time_archived`, `version`, `agent`, `model`) VALUES ('ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', '4f1c2a7e9b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e', NULL, 'wire-the-ferry-relay', '/home/dev/ferry', 'Wire the ferry relay', 1765125200000, 1765125291000, NULL, NULL, '2.0.3', 'build', '{"id":"claude-sonnet-4-5","providerID":"anthropic"}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000001Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'user', 1765125200000, 1765125200000, '{"text":"Wire the ferry relay to the archive; it listens on port 47213. Find the bucket it writes to.","files":[],"agents":[],"references":[],"time":{"created":1765125200000}}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000002Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'assistant', 1765125201000, 1765125201000, '{"agent":"build","model":{"id":"claude-sonnet-4-5","providerID":"anthropic"},"finish":"stop","content":[{"type":"reasoning","id":"rs_1","text":"The relay config names the bucket."},{"type":"text","text":"Listing the spool first."},{"type":"tool","id":"toolu_02A","name":"bash","state":{"status":"completed","input":{"command":"ls /srv/ferry/spool"},"content":[{"type":"text","text":"segment-0001.bin\nsegment-0002.bin"}],"structured":{}},"time":{"created":1765125201200,"ran":1765125201210,"completed":1765125202100,"pruned":1765125260000}},{"type":"text","text":"Now the relay config."},{"type":"tool","id":"toolu_02B","name":"read","state":{"status":"completed","input":{"filePath":"/home/dev/ferry/relay.toml"},"content":[{"type":"text","text":"[archive]\nbucket = \"ferry-archive-w3\"\nregion = \"eu-west-1\"\n\n[relay]\nport = 47213"}],"structured":{}},"time":{"created":1765125202500,"ran":1765125202510,"completed":1765125203400}},{"type":"text","text":"The relay writes to ferry-archive-w3."}],"time":{"created":1765125201000}}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000003Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'compaction', 1765125250000, 1765125250000, '{"reason":"auto","summary":"## Summary\nThe ferry relay listens on port 47213. Its archive bucket is ferry-archive-w3 (relay.toml). Next: point the relay at the bucket and restart it.","time":{"created":1765125250000}}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000004Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'synthetic', 1765125250500, 1765125250500, '{"sessionID":"ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As","text":"Continue if you have next steps","time":{"created":1765125250500}}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000005Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'model-switched', 1765125280000, 1765125280000, '{"model":{"id":"claude-sonnet-4-5","providerID":"anthropic"},"time":{"created":1765125280000}}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000006Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'user', 1765125290000, 1765125290000, '{"text":"Skip the diagram. Tag the release v4.2.7-ferry.","files":[],"agents":[],"references":[],"time":{"created":1765125290000}}');
INSERT INTO `session_message` (`id`, `session_id`, `type`, `time_created`, `time_updated`, `data`) VALUES ('msg_2e3f4a000007Yc8Df3Gh6Jk9Lm', 'ses_2e3f4a5b6c7dRw4Ty8Ui2Op6As', 'assistant', 1765125291000, 1765125291000, '{"agent":"build","model":{"id":"claude-sonnet-4-5","providerID":"anthropic"},"finish":"stop","content":[{"type":"tool","id":"toolu_02C","name":"bash","state":{"status":"completed","input":{"command":"git tag v4.2.7-ferry"},"content":[{"type":"text","text":""}],"structured":{}},"time":{"created":1765125291200,"ran":1765125291210,"completed":1765125292100}},{"type":"text","text":"Tagged v4.2.7-ferry."}],"time":{"created":1765125291000}}');
