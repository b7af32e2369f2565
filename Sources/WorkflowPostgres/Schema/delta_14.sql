-- Format 14: control requests (rule O2; statuses 4, paused, and 5, terminated, are new:
-- `status` is a smallint, unconstrained) and signals' stable names.
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
CREATE TABLE %SCHEMA%.sig_name (
    signal_id uuid PRIMARY KEY REFERENCES %SCHEMA%.sig_signal (signal_id) ON DELETE CASCADE,
    name      text NOT NULL
);
