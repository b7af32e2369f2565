-- The store's tables at the latest format, as a new store gets them. A store of an older
-- format reaches the same tables through the deltas (delta_NN.sql: format NN-1 to NN), so
-- that a column's place is the same either way: a column a delta adds comes last here too.

-- The instances: one row each, written when an instance is made, claimed, released, or
-- changes status; a commit that only appends to the log reads it (the fence, in wf_commit)
-- and leaves it. `owner_*` is the claim (process, its start, a token) and the host that holds
-- it; `updated_ns` the time of the last status change, made when the log ended at
-- `updated_seq` (an entry after that is a later change: its `logged_ns` is the instance's time
-- of last change); `code_version` the version the instance started under (rules V1, V4);
-- `failure` why it is failed (kind and description), set with that status. An instance's last
-- sequence and newest snapshot are its log's and its snapshots' highest keys: a commit keeps no
-- copy of them here.
CREATE TABLE %SCHEMA%.wf_instance (
    instance_key  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text NOT NULL UNIQUE,
    workflow_type text NOT NULL,
    codec         text NOT NULL,
    status        smallint NOT NULL,
    created_ns    bigint NOT NULL,
    updated_ns    bigint NOT NULL,
    owner_pid     integer NOT NULL DEFAULT 0,
    owner_start   bigint NOT NULL DEFAULT 0,
    owner_token   bigint NOT NULL DEFAULT 0,
    owner_host    bigint NOT NULL DEFAULT 0,
    code_version  text,
    failure       text,
    updated_seq   bigint NOT NULL DEFAULT 0
) WITH (fillfactor = 70);

CREATE INDEX wf_instance_owner ON %SCHEMA%.wf_instance (owner_host);
-- The listing's pages in byte order (the order every backend lists in), whatever the database's
-- collation: a page after an id is one index range, not a sort of every instance.
CREATE INDEX wf_instance_id_bytes ON %SCHEMA%.wf_instance (id COLLATE "C");

-- Each instance's log, by (instance, sequence): the engine's record bytes as they are, and
-- when the commit that wrote an entry was made (`logged_ns`; 0: written before format 16).
-- The primary key holds the sequences dense: a commit continues an instance's log only from
-- its highest sequence, and two commits of one sequence cannot both be written.
CREATE TABLE %SCHEMA%.wf_log (
    instance_key bigint NOT NULL,
    seq          bigint NOT NULL,
    record       bytea NOT NULL,
    logged_ns    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (instance_key, seq)
);

CREATE TABLE %SCHEMA%.wf_snapshot (
    instance_key bigint NOT NULL,
    seq          bigint NOT NULL,
    state        bytea NOT NULL,
    PRIMARY KEY (instance_key, seq)
);

-- Hosts: each process that opens the store writable, with a lease on the database's
-- clock. An instance's claim names its host; a host whose lease ran out loses its
-- instances to the live hosts. `code_versions` are the versions a host runs (NULL: every
-- one), by which takeovers are spread. `process_id` and `process_start` name the host's
-- process (0: unknown, a host of format 14 or older), so that a host of the same machine can
-- prove it dead and end its lease at once.
CREATE TABLE %SCHEMA%.wf_host (
    host_id          bigint PRIMARY KEY,
    machine          text NOT NULL,
    label            text NOT NULL,
    started_ns       bigint NOT NULL,
    lease_until      timestamptz NOT NULL,
    takes_over       boolean NOT NULL DEFAULT false,
    code_versions    text[],
    runs_unversioned boolean NOT NULL DEFAULT true,
    process_id       integer NOT NULL DEFAULT 0,
    process_start    bigint NOT NULL DEFAULT 0
);

-- Control requests (rule O2), numbered per instance from 1: a number is taken as the
-- instance's highest plus one, so a concurrent post of the same instance fails on the
-- primary key and is retried (numbers become visible in order).
CREATE TABLE %SCHEMA%.wf_control (
    instance_id  text NOT NULL,
    number       bigint NOT NULL,
    verb         text NOT NULL,
    reason       text,
    deadline_ns  bigint,
    requested_by text NOT NULL,
    requested_ns bigint NOT NULL,
    outcome      text,
    answer_seq   bigint,
    detail       text,
    answered_by  text,
    answered_ns  bigint,
    PRIMARY KEY (instance_id, number)
);

CREATE INDEX wf_control_pending ON %SCHEMA%.wf_control (instance_id, number) WHERE outcome IS NULL;

-- Signals: a record per signal (its latest version), its retained versions (each with its
-- poster's trace context, NULL: none), the consumers with their positions (and the machine
-- a consumer was registered from: whether its run's process is alive can only be judged
-- there), idempotency keys, the stable names signals were made from, and application tables.
CREATE TABLE %SCHEMA%.sig_signal (
    signal_id  uuid PRIMARY KEY,
    latest     bigint NOT NULL,
    created_ns bigint NOT NULL,
    updated_ns bigint NOT NULL
);

CREATE TABLE %SCHEMA%.sig_version (
    signal_id     uuid NOT NULL,
    version       bigint NOT NULL,
    terminates    boolean NOT NULL,
    posted_ns     bigint NOT NULL,
    payload       bytea NOT NULL,
    trace_context bytea,
    PRIMARY KEY (signal_id, version)
);

CREATE TABLE %SCHEMA%.sig_consumer (
    consumer_id      uuid PRIMARY KEY,
    signal_id        uuid NOT NULL,
    owner            text NOT NULL,
    run_id           text NOT NULL,
    process_identity text NOT NULL,
    process_id       integer NOT NULL,
    process_start    bigint NOT NULL,
    behaviour        smallint NOT NULL,
    coalescing       smallint NOT NULL,
    scope            smallint NOT NULL,
    last_delivered   bigint NOT NULL,
    created_ns       bigint NOT NULL,
    machine          text NOT NULL DEFAULT ''
);

CREATE INDEX sig_consumer_signal ON %SCHEMA%.sig_consumer (signal_id);

CREATE TABLE %SCHEMA%.sig_idempotency (
    key       text PRIMARY KEY,
    signal_id uuid NOT NULL,
    version   bigint NOT NULL
);

CREATE TABLE %SCHEMA%.sig_name (
    signal_id uuid PRIMARY KEY REFERENCES %SCHEMA%.sig_signal (signal_id) ON DELETE CASCADE,
    name      text NOT NULL
);

CREATE TABLE %SCHEMA%.app_table (
    table_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name     text NOT NULL UNIQUE
);

CREATE TABLE %SCHEMA%.app_entry (
    table_id bigint NOT NULL,
    key      bytea NOT NULL,
    value    bytea NOT NULL,
    PRIMARY KEY (table_id, key)
);
