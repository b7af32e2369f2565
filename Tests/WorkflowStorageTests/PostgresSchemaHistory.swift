#if Postgres
import Foundation
@testable import WorkflowPostgres

/// The migrations as the builds of formats 1 to 17 ran them, kept as they were: the tests make
/// stores of every older format from them, as older builds left them, and check that the
/// library's schema files bring each to the very schema a new store gets
/// (`PostgresSchemaTests`). The library's schema lives in `Sources/WorkflowPostgres/Schema`; this
/// history only grows: a new format appends what a store of the format before it needs to become
/// one of the new format (its delta, and its routines as they then are), so that stores of every
/// older format can still be made.
enum PostgresSchemaHistory {
    /// Migration n (from 1) is `migrations[n - 1]`: statements run in one transaction.
    static let migrations: [[String]] = [
        [
            // The instances: one row each; `last_seq` and `last_snapshot` change with every commit.
            """
            CREATE TABLE %SCHEMA%.wf_instance (
                instance_key  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id            text NOT NULL UNIQUE,
                workflow_type text NOT NULL,
                codec         text NOT NULL,
                status        smallint NOT NULL,
                created_ns    bigint NOT NULL,
                updated_ns    bigint NOT NULL,
                last_seq      bigint NOT NULL,
                last_snapshot bigint NOT NULL DEFAULT 0,
                owner_pid     integer NOT NULL DEFAULT 0,
                owner_start   bigint NOT NULL DEFAULT 0,
                owner_token   bigint NOT NULL DEFAULT 0
            ) WITH (fillfactor = 70)
            """,
            // Each instance's log, by (instance, sequence): the engine's record bytes as they are.
            """
            CREATE TABLE %SCHEMA%.wf_log (
                instance_key bigint NOT NULL,
                seq          bigint NOT NULL,
                record       bytea NOT NULL,
                PRIMARY KEY (instance_key, seq)
            )
            """,
            """
            CREATE TABLE %SCHEMA%.wf_snapshot (
                instance_key bigint NOT NULL,
                seq          bigint NOT NULL,
                state        bytea NOT NULL,
                PRIMARY KEY (instance_key, seq)
            )
            """,
            // Creates an instance with its first entries; `new_key` is NULL when the id is taken.
            """
            CREATE PROCEDURE %SCHEMA%.wf_create(
                p_id text, p_type text, p_codec text, p_status smallint, p_created bigint,
                p_pid integer, p_start bigint, p_token bigint, p_records bytea[], INOUT new_key bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.wf_instance (id, workflow_type, codec, status, created_ns, updated_ns, last_seq, owner_pid, owner_start, owner_token)
                VALUES (p_id, p_type, p_codec, p_status, p_created, p_created, cardinality(p_records), p_pid, p_start, p_token)
                ON CONFLICT (id) DO NOTHING
                RETURNING instance_key INTO new_key;
                IF new_key IS NOT NULL THEN
                    INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                    SELECT new_key, t.ord, t.rec FROM unnest(p_records) WITH ORDINALITY AS t(rec, ord);
                END IF;
                COMMIT;
            END $$
            """,
            // Gives the instance to the new claim if it still holds the expected one.
            """
            CREATE PROCEDURE %SCHEMA%.wf_claim(
                p_id text, p_old_pid integer, p_old_start bigint, p_old_token bigint,
                p_pid integer, p_start bigint, p_token bigint, INOUT changed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token
                 WHERE id = p_id AND owner_pid = p_old_pid AND owner_start = p_old_start AND owner_token = p_old_token;
                changed := FOUND;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.wf_set_status(p_id text, p_status smallint, p_time bigint, INOUT changed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance SET status = p_status, updated_ns = p_time WHERE id = p_id;
                changed := FOUND;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.wf_delete(p_id text, INOUT existed boolean)
            LANGUAGE plpgsql AS $$
            DECLARE
                v_key bigint;
            BEGIN
                DELETE FROM %SCHEMA%.wf_instance WHERE id = p_id RETURNING instance_key INTO v_key;
                existed := v_key IS NOT NULL;
                IF existed THEN
                    DELETE FROM %SCHEMA%.wf_log WHERE instance_key = v_key;
                    DELETE FROM %SCHEMA%.wf_snapshot WHERE instance_key = v_key;
                END IF;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.wf_put_snapshot(p_id text, p_seq bigint, p_state bytea, INOUT existed boolean)
            LANGUAGE plpgsql AS $$
            DECLARE
                v_key bigint;
            BEGIN
                UPDATE %SCHEMA%.wf_instance SET last_snapshot = GREATEST(last_snapshot, p_seq) WHERE id = p_id RETURNING instance_key INTO v_key;
                existed := v_key IS NOT NULL;
                IF existed THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state) VALUES (v_key, p_seq, p_state)
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                COMMIT;
            END $$
            """,
            // Signals: a record per signal (its latest version), its retained versions, the
            // consumers with their positions, idempotency keys, and application tables.
            """
            CREATE TABLE %SCHEMA%.sig_signal (
                signal_id  uuid PRIMARY KEY,
                latest     bigint NOT NULL,
                created_ns bigint NOT NULL,
                updated_ns bigint NOT NULL
            )
            """,
            """
            CREATE TABLE %SCHEMA%.sig_version (
                signal_id  uuid NOT NULL,
                version    bigint NOT NULL,
                terminates boolean NOT NULL,
                posted_ns  bigint NOT NULL,
                payload    bytea NOT NULL,
                PRIMARY KEY (signal_id, version)
            )
            """,
            """
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
                created_ns       bigint NOT NULL
            )
            """,
            "CREATE INDEX sig_consumer_signal ON %SCHEMA%.sig_consumer (signal_id)",
            """
            CREATE TABLE %SCHEMA%.sig_idempotency (
                key       text PRIMARY KEY,
                signal_id uuid NOT NULL,
                version   bigint NOT NULL
            )
            """,
            """
            CREATE TABLE %SCHEMA%.app_table (
                table_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                name     text NOT NULL UNIQUE
            )
            """,
            """
            CREATE TABLE %SCHEMA%.app_entry (
                table_id bigint NOT NULL,
                key      bytea NOT NULL,
                value    bytea NOT NULL,
                PRIMARY KEY (table_id, key)
            )
            """,
            // Drops versions every consumer has, keeping the newest `p_keep`.
            """
            CREATE FUNCTION %SCHEMA%.sig_prune(p_signal uuid, p_keep integer) RETURNS void
            LANGUAGE plpgsql AS $$
            DECLARE
                v_latest bigint;
                v_needed bigint;
                v_through bigint;
            BEGIN
                SELECT latest INTO v_latest FROM %SCHEMA%.sig_signal WHERE signal_id = p_signal;
                IF NOT FOUND THEN
                    RETURN;
                END IF;
                v_through := GREATEST(v_latest - p_keep, 0);
                SELECT min(last_delivered) INTO v_needed FROM %SCHEMA%.sig_consumer WHERE signal_id = p_signal;
                IF v_needed IS NOT NULL THEN
                    v_through := LEAST(v_through, v_needed);
                END IF;
                IF v_through > 0 THEN
                    DELETE FROM %SCHEMA%.sig_version WHERE signal_id = p_signal AND version <= v_through;
                END IF;
            END $$
            """,
            // Removes a consumer, and its signal's record and versions when it was the last.
            """
            CREATE FUNCTION %SCHEMA%.sig_remove(p_consumer uuid) RETURNS boolean
            LANGUAGE plpgsql AS $$
            DECLARE
                v_signal uuid;
            BEGIN
                DELETE FROM %SCHEMA%.sig_consumer WHERE consumer_id = p_consumer RETURNING signal_id INTO v_signal;
                IF v_signal IS NULL THEN
                    RETURN false;
                END IF;
                IF NOT EXISTS (SELECT 1 FROM %SCHEMA%.sig_consumer WHERE signal_id = v_signal) THEN
                    DELETE FROM %SCHEMA%.sig_signal WHERE signal_id = v_signal;
                    DELETE FROM %SCHEMA%.sig_version WHERE signal_id = v_signal;
                END IF;
                RETURN true;
            END $$
            """,
            // Moves a consumer's position forward to `p_version` (never back) and applies the
            // removal rules; false when it is gone or already there.
            """
            CREATE FUNCTION %SCHEMA%.sig_apply_mark(p_consumer uuid, p_version bigint, p_terminates boolean, p_keep integer) RETURNS boolean
            LANGUAGE plpgsql AS $$
            DECLARE
                v_consumer record;
            BEGIN
                SELECT signal_id, behaviour, last_delivered INTO v_consumer
                  FROM %SCHEMA%.sig_consumer WHERE consumer_id = p_consumer FOR UPDATE;
                IF NOT FOUND OR v_consumer.last_delivered >= p_version THEN
                    RETURN false;
                END IF;
                IF v_consumer.behaviour = 0 OR p_terminates THEN
                    PERFORM %SCHEMA%.sig_remove(p_consumer);
                ELSE
                    UPDATE %SCHEMA%.sig_consumer SET last_delivered = p_version WHERE consumer_id = p_consumer;
                    PERFORM %SCHEMA%.sig_prune(v_consumer.signal_id, p_keep);
                END IF;
                RETURN true;
            END $$
            """,
            // Appends one version per post, in order; a post whose idempotency key was used
            // returns that post's version and appends nothing.
            """
            CREATE PROCEDURE %SCHEMA%.sig_post(
                p_synced boolean, p_signals uuid[], p_payloads bytea[], p_terminates boolean[], p_keys text[], p_has_key boolean[],
                p_keep integer, p_time bigint, INOUT o_versions bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_version bigint;
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                o_versions := '{}';
                FOR i IN 1..COALESCE(cardinality(p_signals), 0) LOOP
                    IF p_has_key[i] THEN
                        INSERT INTO %SCHEMA%.sig_idempotency (key, signal_id, version) VALUES (p_keys[i], p_signals[i], 0)
                        ON CONFLICT (key) DO NOTHING;
                        IF NOT FOUND THEN
                            SELECT version INTO v_version FROM %SCHEMA%.sig_idempotency WHERE key = p_keys[i];
                            o_versions := o_versions || v_version;
                            CONTINUE;
                        END IF;
                    END IF;
                    INSERT INTO %SCHEMA%.sig_signal AS s (signal_id, latest, created_ns, updated_ns) VALUES (p_signals[i], 1, p_time, p_time)
                    ON CONFLICT (signal_id) DO UPDATE SET latest = s.latest + 1, updated_ns = p_time
                    RETURNING latest INTO v_version;
                    INSERT INTO %SCHEMA%.sig_version (signal_id, version, terminates, posted_ns, payload)
                    VALUES (p_signals[i], v_version, p_terminates[i], p_time, p_payloads[i]);
                    IF p_has_key[i] THEN
                        UPDATE %SCHEMA%.sig_idempotency SET version = v_version WHERE key = p_keys[i];
                    END IF;
                    PERFORM %SCHEMA%.sig_prune(p_signals[i], p_keep);
                    o_versions := o_versions || v_version;
                END LOOP;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.sig_register(
                p_id uuid, p_signal uuid, p_owner text, p_run text, p_identity text, p_pid integer, p_start bigint,
                p_behaviour smallint, p_coalescing smallint, p_scope smallint, p_last bigint, p_created bigint, p_time bigint,
                INOUT o_created boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.sig_consumer (consumer_id, signal_id, owner, run_id, process_identity, process_id, process_start,
                                                   behaviour, coalescing, scope, last_delivered, created_ns)
                VALUES (p_id, p_signal, p_owner, p_run, p_identity, p_pid, p_start, p_behaviour, p_coalescing, p_scope, p_last, p_created)
                ON CONFLICT (consumer_id) DO NOTHING;
                o_created := FOUND;
                IF o_created THEN
                    INSERT INTO %SCHEMA%.sig_signal (signal_id, latest, created_ns, updated_ns) VALUES (p_signal, 0, p_time, p_time)
                    ON CONFLICT (signal_id) DO NOTHING;
                END IF;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.sig_remove_consumers(p_ids uuid[], INOUT o_removed integer)
            LANGUAGE plpgsql AS $$
            BEGIN
                o_removed := 0;
                FOR i IN 1..COALESCE(cardinality(p_ids), 0) LOOP
                    IF %SCHEMA%.sig_remove(p_ids[i]) THEN
                        o_removed := o_removed + 1;
                    END IF;
                END LOOP;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.sig_mark(
                p_synced boolean, p_consumer uuid, p_version bigint, p_terminates boolean, p_keep integer, INOUT o_applied boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                o_applied := %SCHEMA%.sig_apply_mark(p_consumer, p_version, p_terminates, p_keep);
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.app_table_named(p_name text, INOUT o_id bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.app_table (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING;
                SELECT table_id INTO o_id FROM %SCHEMA%.app_table WHERE name = p_name;
                COMMIT;
            END $$
            """,
            // One commit of many instances' changes. Instance i (from 1) is `p_keys[i]` with id
            // `p_ids[i]`, made under the claim (`p_pids[i]`, `p_starts[i]`, `p_tokens[i]`); its
            // entries continue its log from `p_firsts[i]`. Entry j belongs to instance
            // `p_entry_owner[j]` and has sequence `p_entry_seq[j]`; snapshots and marks likewise. An
            // instance that is gone (state 2) or held by another claim (state 1) is skipped; one
            // whose entries do not continue its log fails the whole commit (SQLSTATE WF001).
            // Returns, for every instance, its state and its row as it now stands.
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[],
                INOUT o_status smallint[], INOUT o_created bigint[], INOUT o_updated bigint[],
                INOUT o_last_seq bigint[], INOUT o_last_snapshot bigint[], INOUT o_type text[], INOUT o_codec text[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                -- Locks the rows in key order (concurrent commits never deadlock), then decides.
                PERFORM 1 FROM %SCHEMA%.wf_instance WHERE instance_key = ANY (p_keys) ORDER BY instance_key FOR UPDATE;
                SELECT array_agg(CASE
                           WHEN w.instance_key IS NULL OR w.id <> q.id THEN 2
                           WHEN (w.owner_pid, w.owner_start, w.owner_token) <> (q.pid, q.start, q.token) THEN 1
                           ELSE 0 END::smallint ORDER BY q.ord)
                  INTO o_state
                  FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                  LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key;
                SELECT q.id, q.first, w.last_seq INTO v_bad
                  FROM unnest(p_keys, p_ids, p_firsts, p_counts) WITH ORDINALITY AS q(key, id, first, count, ord)
                  JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key
                 WHERE o_state[q.ord] = 0 AND q.count > 0 AND q.first <> w.last_seq + 1
                 LIMIT 1;
                IF FOUND THEN
                    RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                        USING ERRCODE = 'WF001';
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE o_state[e.owner] = 0;
                INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                SELECT p_keys[s.owner], s.seq, s.state
                  FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                 WHERE o_state[s.owner] = 0
                ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                   FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                        WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                  WHERE o_state[m.owner] = 0
                  ORDER BY m.ord;
                UPDATE %SCHEMA%.wf_instance w
                   SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                       updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                       last_snapshot = GREATEST(w.last_snapshot, COALESCE(
                           (SELECT max(s.seq) FROM unnest(p_snap_owner, p_snap_seq) AS s(owner, seq) WHERE s.owner = q.ord), 0))
                  FROM unnest(p_keys, p_firsts, p_counts, p_updated) WITH ORDINALITY AS q(key, first, count, updated, ord)
                 WHERE w.instance_key = q.key AND o_state[q.ord] = 0;
                SELECT array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
                       array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord), array_agg(COALESCE(w.status, 0) ORDER BY q.ord),
                       array_agg(COALESCE(w.created_ns, 0) ORDER BY q.ord), array_agg(COALESCE(w.updated_ns, 0) ORDER BY q.ord),
                       array_agg(COALESCE(w.last_seq, 0) ORDER BY q.ord), array_agg(COALESCE(w.last_snapshot, 0) ORDER BY q.ord),
                       array_agg(COALESCE(w.workflow_type, '') ORDER BY q.ord), array_agg(COALESCE(w.codec, '') ORDER BY q.ord)
                  INTO o_pid, o_start, o_token, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_type, o_codec
                  FROM unnest(p_keys) WITH ORDINALITY AS q(key, ord)
                  LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key;
                COMMIT;
            END $$
            """,
        ],
        [
            // Hosts: each process that opens the store writable, with a lease on the database's
            // clock. An instance's claim names its host; a host whose lease ran out loses its
            // instances to the live hosts.
            """
            CREATE TABLE %SCHEMA%.wf_host (
                host_id     bigint PRIMARY KEY,
                machine     text NOT NULL,
                label       text NOT NULL,
                started_ns  bigint NOT NULL,
                lease_until timestamptz NOT NULL,
                takes_over  boolean NOT NULL DEFAULT false
            )
            """,
            "ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN owner_host bigint NOT NULL DEFAULT 0",
            "CREATE INDEX wf_instance_owner ON %SCHEMA%.wf_instance (owner_host)",
            "DROP PROCEDURE %SCHEMA%.wf_create",
            """
            CREATE PROCEDURE %SCHEMA%.wf_create(
                p_id text, p_type text, p_codec text, p_status smallint, p_created bigint,
                p_pid integer, p_start bigint, p_token bigint, p_host bigint, p_records bytea[], INOUT new_key bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.wf_instance (id, workflow_type, codec, status, created_ns, updated_ns, last_seq,
                                                  owner_pid, owner_start, owner_token, owner_host)
                VALUES (p_id, p_type, p_codec, p_status, p_created, p_created, cardinality(p_records), p_pid, p_start, p_token, p_host)
                ON CONFLICT (id) DO NOTHING
                RETURNING instance_key INTO new_key;
                IF new_key IS NOT NULL THEN
                    INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                    SELECT new_key, t.ord, t.rec FROM unnest(p_records) WITH ORDINALITY AS t(rec, ord);
                END IF;
                COMMIT;
            END $$
            """,
            "DROP PROCEDURE %SCHEMA%.wf_claim",
            // Gives the instance to the new claim and host if it still holds the expected ones.
            """
            CREATE PROCEDURE %SCHEMA%.wf_claim(
                p_id text, p_old_pid integer, p_old_start bigint, p_old_token bigint, p_old_host bigint,
                p_pid integer, p_start bigint, p_token bigint, p_host bigint, INOUT changed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance
                   SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
                 WHERE id = p_id AND owner_pid = p_old_pid AND owner_start = p_old_start AND owner_token = p_old_token
                   AND owner_host = p_old_host;
                changed := FOUND;
                COMMIT;
            END $$
            """,
            // Registers the host or renews its lease for `p_lease_ms` from now, on the server's clock.
            """
            CREATE PROCEDURE %SCHEMA%.wf_host_renew(
                p_host bigint, p_machine text, p_label text, p_started bigint, p_lease_ms bigint, INOUT o_renewed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.wf_host (host_id, machine, label, started_ns, lease_until)
                VALUES (p_host, p_machine, p_label, p_started, clock_timestamp() + p_lease_ms * interval '1 millisecond')
                ON CONFLICT (host_id) DO UPDATE SET lease_until = EXCLUDED.lease_until;
                DELETE FROM %SCHEMA%.wf_host WHERE lease_until < clock_timestamp() - interval '1 day';
                o_renewed := true;
                COMMIT;
            END $$
            """,
            // The host takes over instances of hosts that are gone: they are spread over such hosts.
            """
            CREATE PROCEDURE %SCHEMA%.wf_host_takes_over(p_host bigint, INOUT o_marked boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_host SET takes_over = true WHERE host_id = p_host;
                o_marked := FOUND;
                COMMIT;
            END $$
            """,
            """
            CREATE PROCEDURE %SCHEMA%.wf_host_leave(p_host bigint, INOUT o_left boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM %SCHEMA%.wf_host WHERE host_id = p_host;
                o_left := FOUND;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit without a separate lock and read of every row: one UPDATE moves each
            // instance's row on only where the claim is the one its changes were made under and
            // its entries continue its log (the fence), and returns the rows; only when some
            // instance was not moved does a second statement tell why.
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[],
                INOUT o_status smallint[], INOUT o_created bigint[], INOUT o_updated bigint[],
                INOUT o_last_seq bigint[], INOUT o_last_snapshot bigint[], INOUT o_type text[], INOUT o_codec text[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                WITH q AS (
                    SELECT * FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max)
                        WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, ord)
                ), u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap)
                      FROM q
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                    RETURNING q.ord, w.owner_pid, w.owner_start, w.owner_token, w.status, w.created_ns, w.updated_ns, w.last_seq,
                              w.last_snapshot, w.workflow_type, w.codec
                )
                SELECT array_agg(CASE WHEN u.ord IS NULL THEN 2 ELSE 0 END::smallint ORDER BY q.ord),
                       array_agg(COALESCE(u.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(u.owner_start, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.owner_token, 0) ORDER BY q.ord), array_agg(COALESCE(u.status, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.created_ns, 0) ORDER BY q.ord), array_agg(COALESCE(u.updated_ns, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.last_seq, 0) ORDER BY q.ord), array_agg(COALESCE(u.last_snapshot, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.workflow_type, '') ORDER BY q.ord), array_agg(COALESCE(u.codec, '') ORDER BY q.ord)
                  INTO o_state, o_pid, o_start, o_token, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_type, o_codec
                  FROM q LEFT JOIN u ON u.ord = q.ord;
                IF 2 = ANY (o_state) THEN
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE o_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Gone (2), or held by another claim (1, with that claim).
                    SELECT array_agg(CASE WHEN o_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2 ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_pid[q.ord] ELSE COALESCE(w.owner_pid, 0) END ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_start[q.ord] ELSE COALESCE(w.owner_start, 0) END ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_token[q.ord] ELSE COALESCE(w.owner_token, 0) END ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids) WITH ORDINALITY AS q(key, id, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE o_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE o_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE o_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // The machine a consumer was registered from: whether its run's process is alive can
            // only be judged there, so only that machine's runs clean it up.
            "ALTER TABLE %SCHEMA%.sig_consumer ADD COLUMN machine text NOT NULL DEFAULT ''",
            "DROP PROCEDURE %SCHEMA%.sig_register",
            """
            CREATE PROCEDURE %SCHEMA%.sig_register(
                p_id uuid, p_signal uuid, p_owner text, p_run text, p_identity text, p_pid integer, p_start bigint,
                p_behaviour smallint, p_coalescing smallint, p_scope smallint, p_last bigint, p_created bigint, p_time bigint,
                p_machine text, INOUT o_created boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.sig_consumer (consumer_id, signal_id, owner, run_id, process_identity, process_id, process_start,
                                                   behaviour, coalescing, scope, last_delivered, created_ns, machine)
                VALUES (p_id, p_signal, p_owner, p_run, p_identity, p_pid, p_start, p_behaviour, p_coalescing, p_scope, p_last, p_created,
                        p_machine)
                ON CONFLICT (consumer_id) DO NOTHING;
                o_created := FOUND;
                IF o_created THEN
                    INSERT INTO %SCHEMA%.sig_signal (signal_id, latest, created_ns, updated_ns) VALUES (p_signal, 0, p_time, p_time)
                    ON CONFLICT (signal_id) DO NOTHING;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit refuses an instance whose changes carry a delivery mark its consumer
            // already has (the action would apply that signal version twice): the fence UPDATE
            // does not move it, and it is reported as state 3.
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[],
                INOUT o_status smallint[], INOUT o_created bigint[], INOUT o_updated bigint[],
                INOUT o_last_seq bigint[], INOUT o_last_snapshot bigint[], INOUT o_type text[], INOUT o_codec text[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                WITH q AS (
                    SELECT * FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max)
                        WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, ord)
                ), u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap)
                      FROM q
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                       AND NOT EXISTS (
                           SELECT 1 FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                             JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                            WHERE m.owner = q.ord AND c.last_delivered >= m.version)
                    RETURNING q.ord, w.owner_pid, w.owner_start, w.owner_token, w.status, w.created_ns, w.updated_ns, w.last_seq,
                              w.last_snapshot, w.workflow_type, w.codec
                )
                SELECT array_agg(CASE WHEN u.ord IS NULL THEN 2 ELSE 0 END::smallint ORDER BY q.ord),
                       array_agg(COALESCE(u.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(u.owner_start, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.owner_token, 0) ORDER BY q.ord), array_agg(COALESCE(u.status, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.created_ns, 0) ORDER BY q.ord), array_agg(COALESCE(u.updated_ns, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.last_seq, 0) ORDER BY q.ord), array_agg(COALESCE(u.last_snapshot, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.workflow_type, '') ORDER BY q.ord), array_agg(COALESCE(u.codec, '') ORDER BY q.ord)
                  INTO o_state, o_pid, o_start, o_token, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_type, o_codec
                  FROM q LEFT JOIN u ON u.ord = q.ord;
                IF 2 = ANY (o_state) THEN
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE o_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Gone (2), held by another claim (1, with that claim), or held by this one but
                    -- carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN o_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_pid[q.ord] ELSE COALESCE(w.owner_pid, 0) END ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_start[q.ord] ELSE COALESCE(w.owner_start, 0) END ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_token[q.ord] ELSE COALESCE(w.owner_token, 0) END ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE o_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE o_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE o_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit sets an instance's status with its entries (-1: unchanged): a workflow
            // that finishes is completed by the commit of the entry that finished it.
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[], p_status smallint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[],
                INOUT o_status smallint[], INOUT o_created bigint[], INOUT o_updated bigint[],
                INOUT o_last_seq bigint[], INOUT o_last_snapshot bigint[], INOUT o_type text[], INOUT o_codec text[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                WITH q AS (
                    SELECT * FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max, p_status)
                        WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, status, ord)
                ), u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap),
                           status = CASE WHEN q.status >= 0 THEN q.status ELSE w.status END
                      FROM q
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                       AND NOT EXISTS (
                           SELECT 1 FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                             JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                            WHERE m.owner = q.ord AND c.last_delivered >= m.version)
                    RETURNING q.ord, w.owner_pid, w.owner_start, w.owner_token, w.status, w.created_ns, w.updated_ns, w.last_seq,
                              w.last_snapshot, w.workflow_type, w.codec
                )
                SELECT array_agg(CASE WHEN u.ord IS NULL THEN 2 ELSE 0 END::smallint ORDER BY q.ord),
                       array_agg(COALESCE(u.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(u.owner_start, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.owner_token, 0) ORDER BY q.ord), array_agg(COALESCE(u.status, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.created_ns, 0) ORDER BY q.ord), array_agg(COALESCE(u.updated_ns, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.last_seq, 0) ORDER BY q.ord), array_agg(COALESCE(u.last_snapshot, 0) ORDER BY q.ord),
                       array_agg(COALESCE(u.workflow_type, '') ORDER BY q.ord), array_agg(COALESCE(u.codec, '') ORDER BY q.ord)
                  INTO o_state, o_pid, o_start, o_token, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_type, o_codec
                  FROM q LEFT JOIN u ON u.ord = q.ord;
                IF 2 = ANY (o_state) THEN
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE o_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Gone (2), held by another claim (1, with that claim), or held by this one but
                    -- carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN o_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_pid[q.ord] ELSE COALESCE(w.owner_pid, 0) END ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_start[q.ord] ELSE COALESCE(w.owner_start, 0) END ORDER BY q.ord),
                           array_agg(CASE WHEN o_state[q.ord] = 0 THEN o_token[q.ord] ELSE COALESCE(w.owner_token, 0) END ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE o_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE o_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE o_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // A version keeps its poster's trace context (NULL: none) for its deliveries' spans.
            "ALTER TABLE %SCHEMA%.sig_version ADD COLUMN trace_context bytea",
            "DROP PROCEDURE %SCHEMA%.sig_post",
            """
            CREATE PROCEDURE %SCHEMA%.sig_post(
                p_synced boolean, p_signals uuid[], p_payloads bytea[], p_terminates boolean[], p_keys text[], p_has_key boolean[],
                p_contexts bytea[], p_keep integer, p_time bigint, INOUT o_versions bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_version bigint;
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                o_versions := '{}';
                FOR i IN 1..COALESCE(cardinality(p_signals), 0) LOOP
                    IF p_has_key[i] THEN
                        INSERT INTO %SCHEMA%.sig_idempotency (key, signal_id, version) VALUES (p_keys[i], p_signals[i], 0)
                        ON CONFLICT (key) DO NOTHING;
                        IF NOT FOUND THEN
                            SELECT version INTO v_version FROM %SCHEMA%.sig_idempotency WHERE key = p_keys[i];
                            o_versions := o_versions || v_version;
                            CONTINUE;
                        END IF;
                    END IF;
                    INSERT INTO %SCHEMA%.sig_signal AS s (signal_id, latest, created_ns, updated_ns) VALUES (p_signals[i], 1, p_time, p_time)
                    ON CONFLICT (signal_id) DO UPDATE SET latest = s.latest + 1, updated_ns = p_time
                    RETURNING latest INTO v_version;
                    INSERT INTO %SCHEMA%.sig_version (signal_id, version, terminates, posted_ns, payload, trace_context)
                    VALUES (p_signals[i], v_version, p_terminates[i], p_time, p_payloads[i], NULLIF(p_contexts[i], ''::bytea));
                    IF p_has_key[i] THEN
                        UPDATE %SCHEMA%.sig_idempotency SET version = v_version WHERE key = p_keys[i];
                    END IF;
                    PERFORM %SCHEMA%.sig_prune(p_signals[i], p_keep);
                    o_versions := o_versions || v_version;
                END LOOP;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit answers for the instances it wrote in the order the server updated their
            // rows (each with its place in the request), not sorted column by column: a sort per
            // returned column was about a tenth of the server's work per commit. Only when some
            // instance was not written does it also answer, for every instance, in request order,
            // whether it was refused and which claim holds it.
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[], p_status smallint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_ord integer[], INOUT o_status smallint[], INOUT o_created bigint[], INOUT o_updated bigint[],
                INOUT o_last_seq bigint[], INOUT o_last_snapshot bigint[], INOUT o_type text[], INOUT o_codec text[],
                INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
                v_state smallint[];
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                WITH q AS (
                    SELECT * FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max, p_status)
                        WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, status, ord)
                ), u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap),
                           status = CASE WHEN q.status >= 0 THEN q.status ELSE w.status END
                      FROM q
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                       AND NOT EXISTS (
                           SELECT 1 FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                             JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                            WHERE m.owner = q.ord AND c.last_delivered >= m.version)
                    RETURNING q.ord, w.status, w.created_ns, w.updated_ns, w.last_seq, w.last_snapshot, w.workflow_type, w.codec
                )
                -- Every aggregate reads the same rows in the same order: the arrays stay aligned.
                SELECT array_agg(u.ord::integer), array_agg(u.status), array_agg(u.created_ns), array_agg(u.updated_ns),
                       array_agg(u.last_seq), array_agg(u.last_snapshot), array_agg(u.workflow_type), array_agg(u.codec)
                  INTO o_ord, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_type, o_codec
                  FROM u;
                v_state := array_fill(2::smallint, ARRAY[cardinality(p_keys)]);
                FOR i IN 1..COALESCE(cardinality(o_ord), 0) LOOP
                    v_state[o_ord[i]] := 0;
                END LOOP;
                IF COALESCE(cardinality(o_ord), 0) < cardinality(p_keys) THEN
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE v_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Written (0), gone (2), held by another claim (1, with that claim), or held by
                    -- this one but carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN v_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                    v_state := o_state;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE v_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE v_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE v_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // Claims a free instance (no claim, no host: its last host stopped) in one call and
            // returns its row; a NULL key when it is not free (or not there), for the caller to
            // read it with its holder and decide.
            """
            CREATE PROCEDURE %SCHEMA%.wf_claim_free(
                p_id text, p_pid integer, p_start bigint, p_token bigint, p_host bigint,
                INOUT o_key bigint, INOUT o_type text, INOUT o_codec text, INOUT o_status smallint, INOUT o_created bigint,
                INOUT o_updated bigint, INOUT o_last_seq bigint, INOUT o_last_snapshot bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance
                   SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
                 WHERE id = p_id AND owner_pid = 0 AND owner_start = 0 AND owner_token = 0 AND owner_host = 0
                RETURNING instance_key, workflow_type, codec, status, created_ns, updated_ns, last_seq, last_snapshot
                     INTO o_key, o_type, o_codec, o_status, o_created, o_updated, o_last_seq, o_last_snapshot;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit looks up its delivery marks' consumers once, before the fence and only
            // when it carries marks, instead of in a subquery the fence ran for every instance;
            // and it keeps no per-instance state when every instance was moved (the common case).
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[], p_status smallint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_ord integer[], INOUT o_status smallint[], INOUT o_created bigint[], INOUT o_updated bigint[],
                INOUT o_last_seq bigint[], INOUT o_last_snapshot bigint[], INOUT o_type text[], INOUT o_codec text[],
                INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
                v_state smallint[];
                v_delivered integer[];
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    SELECT array_agg(m.owner) INTO v_delivered
                      FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                      JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                     WHERE c.last_delivered >= m.version;
                END IF;
                WITH u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap),
                           status = CASE WHEN q.status >= 0 THEN q.status ELSE w.status END
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max, p_status)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, status, ord)
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                       AND (v_delivered IS NULL OR q.ord <> ALL (v_delivered))
                    RETURNING q.ord, w.status, w.created_ns, w.updated_ns, w.last_seq, w.last_snapshot, w.workflow_type, w.codec
                )
                -- Every aggregate reads the same rows in the same order: the arrays stay aligned.
                SELECT array_agg(u.ord::integer), array_agg(u.status), array_agg(u.created_ns), array_agg(u.updated_ns),
                       array_agg(u.last_seq), array_agg(u.last_snapshot), array_agg(u.workflow_type), array_agg(u.codec)
                  INTO o_ord, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_type, o_codec
                  FROM u;
                IF COALESCE(cardinality(o_ord), 0) < cardinality(p_keys) THEN
                    v_state := array_fill(2::smallint, ARRAY[cardinality(p_keys)]);
                    FOR i IN 1..COALESCE(cardinality(o_ord), 0) LOOP
                        v_state[o_ord[i]] := 0;
                    END LOOP;
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE v_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Written (0), gone (2), held by another claim (1, with that claim), or held by
                    -- this one but carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN v_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                    v_state := o_state;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE v_state IS NULL OR v_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE v_state IS NULL OR v_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE v_state IS NULL OR v_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit answers only which instances it wrote (each by its place in the
            // request), not their rows: nothing reads them, and every field of every instance
            // sent back cost the server and the client work on every commit.
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            """
            CREATE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[], p_status smallint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_ord integer[], INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
                v_state smallint[];
                v_delivered integer[];
            BEGIN
                IF NOT p_synced THEN
                    PERFORM set_config('synchronous_commit', 'off', true);
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    SELECT array_agg(m.owner) INTO v_delivered
                      FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                      JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                     WHERE c.last_delivered >= m.version;
                END IF;
                WITH u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap),
                           status = CASE WHEN q.status >= 0 THEN q.status ELSE w.status END
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max, p_status)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, status, ord)
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                       AND (v_delivered IS NULL OR q.ord <> ALL (v_delivered))
                    RETURNING q.ord
                )
                SELECT array_agg(u.ord::integer) INTO o_ord FROM u;
                IF COALESCE(cardinality(o_ord), 0) < cardinality(p_keys) THEN
                    v_state := array_fill(2::smallint, ARRAY[cardinality(p_keys)]);
                    FOR i IN 1..COALESCE(cardinality(o_ord), 0) LOOP
                        v_state[o_ord[i]] := 0;
                    END LOOP;
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE v_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Written (0), gone (2), held by another claim (1, with that claim), or held by
                    -- this one but carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN v_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                    v_state := o_state;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE v_state IS NULL OR v_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE v_state IS NULL OR v_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE v_state IS NULL OR v_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // The commit's statements run their generic plans, made per connection from the tables'
            // statistics (again when those change), whatever the size of the commit. By default
            // PostgreSQL plans a procedure's statement anew for each of its first five runs on a
            // connection, then keeps doing so for as long as the generic plan's estimated cost
            // stays above those plans' average; a plan made for given arrays knows their lengths,
            // so a connection whose first commits carry one instance or a few can plan every later
            // commit's statements again, depending on the tables' statistics. A setting made with
            // `set_config(…, true)` lasts until the procedure's `COMMIT`; an assignment is
            // evaluated without the executor that `PERFORM` starts.
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_snap_max bigint[], p_status smallint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_ord integer[], INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
                v_state smallint[];
                v_delivered integer[];
                v_setting text;
            BEGIN
                v_setting := set_config('plan_cache_mode', 'force_generic_plan', true);
                IF NOT p_synced THEN
                    v_setting := set_config('synchronous_commit', 'off', true);
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    SELECT array_agg(m.owner) INTO v_delivered
                      FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                      JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                     WHERE c.last_delivered >= m.version;
                END IF;
                WITH u AS (
                    UPDATE %SCHEMA%.wf_instance w
                       SET last_seq = CASE WHEN q.count > 0 THEN q.first + q.count - 1 ELSE w.last_seq END,
                           updated_ns = CASE WHEN q.count > 0 THEN q.updated ELSE w.updated_ns END,
                           last_snapshot = GREATEST(w.last_snapshot, q.snap),
                           status = CASE WHEN q.status >= 0 THEN q.status ELSE w.status END
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts, p_updated, p_snap_max, p_status)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, updated, snap, status, ord)
                     WHERE w.instance_key = q.key AND w.id = q.id
                       AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND (q.count = 0 OR w.last_seq = q.first - 1)
                       AND (v_delivered IS NULL OR q.ord <> ALL (v_delivered))
                    RETURNING q.ord
                )
                SELECT array_agg(u.ord::integer) INTO o_ord FROM u;
                IF COALESCE(cardinality(o_ord), 0) < cardinality(p_keys) THEN
                    v_state := array_fill(2::smallint, ARRAY[cardinality(p_keys)]);
                    FOR i IN 1..COALESCE(cardinality(o_ord), 0) LOOP
                        v_state[o_ord[i]] := 0;
                    END LOOP;
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, w.last_seq INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                     WHERE v_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND q.count > 0 AND w.last_seq <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last_seq
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Written (0), gone (2), held by another claim (1, with that claim), or held by
                    -- this one but carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN v_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                    v_state := o_state;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                SELECT p_keys[e.owner], e.seq, e.rec
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE v_state IS NULL OR v_state[e.owner] = 0;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE v_state IS NULL OR v_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE v_state IS NULL OR v_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
        ],
        [
            // Code versions (rules V1, V4): the version each instance started under, and the
            // versions each host runs (NULL: every one), by which takeovers are spread. A library
            // that reads up to format 12 would also take entries and snapshots with version notes
            // for damage: it refuses the store instead.
            "ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN code_version text",
            // Why an instance is failed (kind and description), set with that status.
            "ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN failure text",
            "DROP PROCEDURE %SCHEMA%.wf_set_status",
            """
            CREATE PROCEDURE %SCHEMA%.wf_set_status(p_id text, p_status smallint, p_time bigint, p_failure text, INOUT changed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance SET status = p_status, updated_ns = p_time,
                       failure = CASE WHEN p_status = 2 THEN p_failure END
                 WHERE id = p_id;
                changed := FOUND;
                COMMIT;
            END $$
            """,
            "ALTER TABLE %SCHEMA%.wf_host ADD COLUMN code_versions text[]",
            "ALTER TABLE %SCHEMA%.wf_host ADD COLUMN runs_unversioned boolean NOT NULL DEFAULT true",
            "DROP PROCEDURE %SCHEMA%.wf_create",
            """
            CREATE PROCEDURE %SCHEMA%.wf_create(
                p_id text, p_type text, p_codec text, p_status smallint, p_created bigint,
                p_pid integer, p_start bigint, p_token bigint, p_host bigint, p_records bytea[], p_code_version text,
                INOUT new_key bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.wf_instance (id, workflow_type, codec, status, created_ns, updated_ns, last_seq,
                                                  owner_pid, owner_start, owner_token, owner_host, code_version)
                VALUES (p_id, p_type, p_codec, p_status, p_created, p_created, cardinality(p_records), p_pid, p_start, p_token, p_host,
                        p_code_version)
                ON CONFLICT (id) DO NOTHING
                RETURNING instance_key INTO new_key;
                IF new_key IS NOT NULL THEN
                    INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record)
                    SELECT new_key, t.ord, t.rec FROM unnest(p_records) WITH ORDINALITY AS t(rec, ord);
                END IF;
                COMMIT;
            END $$
            """,
            "DROP PROCEDURE %SCHEMA%.wf_claim_free",
            """
            CREATE PROCEDURE %SCHEMA%.wf_claim_free(
                p_id text, p_pid integer, p_start bigint, p_token bigint, p_host bigint,
                INOUT o_key bigint, INOUT o_type text, INOUT o_codec text, INOUT o_status smallint, INOUT o_created bigint,
                INOUT o_updated bigint, INOUT o_last_seq bigint, INOUT o_last_snapshot bigint, INOUT o_code_version text)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance
                   SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
                 WHERE id = p_id AND owner_pid = 0 AND owner_start = 0 AND owner_token = 0 AND owner_host = 0
                RETURNING instance_key, workflow_type, codec, status, created_ns, updated_ns, last_seq, last_snapshot, code_version
                     INTO o_key, o_type, o_codec, o_status, o_created, o_updated, o_last_seq, o_last_snapshot, o_code_version;
                COMMIT;
            END $$
            """,
            // The code versions a host runs, for the spread of takeovers.
            """
            CREATE PROCEDURE %SCHEMA%.wf_host_code_versions(p_host bigint, p_versions text[], p_unversioned boolean, INOUT done boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_host SET code_versions = p_versions, runs_unversioned = p_unversioned WHERE host_id = p_host;
                done := FOUND;
                COMMIT;
            END $$
            """,
        ],
        [
            // Control requests (rule O2), numbered per instance from 1: a number is taken as the
            // instance's highest plus one, so a concurrent post of the same instance fails on the
            // primary key and is retried (numbers become visible in order). Statuses 4 (paused)
            // and 5 (terminated) are new; `status` is a smallint, unconstrained.
            """
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
            )
            """,
            "CREATE INDEX wf_control_pending ON %SCHEMA%.wf_control (instance_id, number) WHERE outcome IS NULL",
            // The stable names signals were made from (`SignalID(stableName:)`), for operators.
            """
            CREATE TABLE %SCHEMA%.sig_name (
                signal_id uuid PRIMARY KEY REFERENCES %SCHEMA%.sig_signal (signal_id) ON DELETE CASCADE,
                name      text NOT NULL
            )
            """,
        ],
        [
            // A host's process, by which a host of the same machine proves it dead.
            "ALTER TABLE %SCHEMA%.wf_host ADD COLUMN process_id integer NOT NULL DEFAULT 0",
            "ALTER TABLE %SCHEMA%.wf_host ADD COLUMN process_start bigint NOT NULL DEFAULT 0",
            "DROP PROCEDURE %SCHEMA%.wf_host_renew",
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_host_renew(
                p_host bigint, p_machine text, p_label text, p_started bigint, p_lease_ms bigint, p_pid integer, p_process_start bigint,
                INOUT o_renewed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.wf_host (host_id, machine, label, started_ns, lease_until, process_id, process_start)
                VALUES (p_host, p_machine, p_label, p_started, clock_timestamp() + p_lease_ms * interval '1 millisecond', p_pid, p_process_start)
                ON CONFLICT (host_id) DO UPDATE SET lease_until = EXCLUDED.lease_until;
                DELETE FROM %SCHEMA%.wf_host WHERE lease_until < clock_timestamp() - interval '1 day';
                o_renewed := true;
                COMMIT;
            END $$
            """,
        ],
        [
            // Format 16: the fence reads an instance's row instead of writing it; the row keeps no copy of
            // the log's last sequence or the newest snapshot; each entry keeps when its commit was made,
            // and the row where the log ended at its last status change.
            "ALTER TABLE %SCHEMA%.wf_instance DROP COLUMN last_seq",
            "ALTER TABLE %SCHEMA%.wf_instance DROP COLUMN last_snapshot",
            "ALTER TABLE %SCHEMA%.wf_instance ADD COLUMN updated_seq bigint NOT NULL DEFAULT 0",
            "ALTER TABLE %SCHEMA%.wf_log ADD COLUMN logged_ns bigint NOT NULL DEFAULT 0",
            "DROP PROCEDURE %SCHEMA%.wf_commit",
            // The commit by host, fenced by its advisory lock and a read of each row.
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_commit(
                p_synced boolean, p_host bigint,
                p_keys bigint[], p_ids text[], p_pids integer[], p_starts bigint[], p_tokens bigint[],
                p_firsts bigint[], p_counts integer[], p_updated bigint[], p_status smallint[],
                p_entry_owner integer[], p_entry_seq bigint[], p_records bytea[],
                p_snap_owner integer[], p_snap_seq bigint[], p_snaps bytea[],
                p_mark_owner integer[], p_mark_consumer uuid[], p_mark_version bigint[], p_mark_terminates boolean[], p_mark_keep integer[],
                INOUT o_ord integer[], INOUT o_state smallint[], INOUT o_pid integer[], INOUT o_start bigint[], INOUT o_token bigint[])
            LANGUAGE plpgsql AS $$
            DECLARE
                v_bad record;
                v_state smallint[];
                v_delivered integer[];
                v_setting text;
            BEGIN
                v_setting := set_config('plan_cache_mode', 'force_generic_plan', true);
                v_setting := set_config('enable_seqscan', 'off', true);
                IF NOT p_synced THEN
                    v_setting := set_config('synchronous_commit', 'off', true);
                END IF;
                v_setting := pg_advisory_xact_lock_shared(p_host)::text;
                IF cardinality(p_mark_consumer) > 0 THEN
                    SELECT array_agg(m.owner) INTO v_delivered
                      FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version) AS m(owner, consumer, version)
                      JOIN %SCHEMA%.sig_consumer c ON c.consumer_id = m.consumer
                     WHERE c.last_delivered >= m.version;
                END IF;
                -- One probe of each table's primary key per instance: the subqueries' LIMITs keep the
                -- planner from joining or hashing the whole table instead, and with sequential scans off
                -- it probes a table of a few pages by its index too (it plans once, for any size).
                SELECT array_agg(q.ord::integer) INTO o_ord
                  FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                       WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                 CROSS JOIN LATERAL (SELECT w.owner_pid, w.owner_start, w.owner_token, w.owner_host FROM %SCHEMA%.wf_instance w
                                      WHERE w.instance_key = q.key AND w.id = q.id LIMIT 1) w
                 WHERE w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token AND w.owner_host = p_host
                   AND (q.count = 0 OR (SELECT true FROM %SCHEMA%.wf_log l WHERE l.instance_key = q.key AND l.seq = q.first - 1 LIMIT 1))
                   AND (v_delivered IS NULL OR q.ord <> ALL (v_delivered));
                IF COALESCE(cardinality(o_ord), 0) < cardinality(p_keys) THEN
                    v_state := array_fill(2::smallint, ARRAY[cardinality(p_keys)]);
                    FOR i IN 1..COALESCE(cardinality(o_ord), 0) LOOP
                        v_state[o_ord[i]] := 0;
                    END LOOP;
                    -- Held by this claim but not continued by these entries: the whole commit fails.
                    SELECT q.id, q.first, l.last INTO v_bad
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens, p_firsts, p_counts)
                           WITH ORDINALITY AS q(key, id, pid, start, token, first, count, ord)
                      JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id
                      CROSS JOIN LATERAL (SELECT COALESCE(max(seq), 0) AS last FROM %SCHEMA%.wf_log WHERE instance_key = q.key) l
                     WHERE v_state[q.ord] = 2 AND w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                       AND w.owner_host = p_host AND q.count > 0 AND l.last <> q.first - 1
                     LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION 'instance %''s entries start at %, after %', v_bad.id, v_bad.first, v_bad.last
                            USING ERRCODE = 'WF001';
                    END IF;
                    -- Written (0), gone (2), held by another claim (1, with that claim), or held by
                    -- this one but carrying a delivery its consumer already had (3).
                    SELECT array_agg(CASE WHEN v_state[q.ord] = 0 THEN 0 WHEN w.instance_key IS NULL THEN 2
                                          WHEN w.owner_pid = q.pid AND w.owner_start = q.start AND w.owner_token = q.token
                                               AND w.owner_host = p_host THEN 3
                                          ELSE 1 END::smallint ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_pid, 0) ORDER BY q.ord), array_agg(COALESCE(w.owner_start, 0) ORDER BY q.ord),
                           array_agg(COALESCE(w.owner_token, 0) ORDER BY q.ord)
                      INTO o_state, o_pid, o_start, o_token
                      FROM unnest(p_keys, p_ids, p_pids, p_starts, p_tokens) WITH ORDINALITY AS q(key, id, pid, start, token, ord)
                      LEFT JOIN %SCHEMA%.wf_instance w ON w.instance_key = q.key AND w.id = q.id;
                    v_state := o_state;
                END IF;
                INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record, logged_ns)
                SELECT p_keys[e.owner], e.seq, e.rec, p_updated[e.owner]
                  FROM unnest(p_entry_owner, p_entry_seq, p_records) AS e(owner, seq, rec)
                 WHERE v_state IS NULL OR v_state[e.owner] = 0;
                IF 0 <= ANY (p_status) THEN
                    UPDATE %SCHEMA%.wf_instance w
                       SET status = q.status, updated_ns = q.updated, updated_seq = GREATEST(w.updated_seq, q.first + q.count - 1)
                      FROM unnest(p_keys, p_status, p_updated, p_firsts, p_counts) WITH ORDINALITY AS q(key, status, updated, first, count, ord)
                     WHERE w.instance_key = q.key AND q.status >= 0 AND (v_state IS NULL OR v_state[q.ord] = 0);
                END IF;
                IF cardinality(p_snaps) > 0 THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state)
                    SELECT p_keys[s.owner], s.seq, s.state
                      FROM unnest(p_snap_owner, p_snap_seq, p_snaps) AS s(owner, seq, state)
                     WHERE v_state IS NULL OR v_state[s.owner] = 0
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                IF cardinality(p_mark_consumer) > 0 THEN
                    PERFORM %SCHEMA%.sig_apply_mark(m.consumer, m.version, m.terminates, m.keep)
                       FROM unnest(p_mark_owner, p_mark_consumer, p_mark_version, p_mark_terminates, p_mark_keep)
                            WITH ORDINALITY AS m(owner, consumer, version, terminates, keep, ord)
                      WHERE v_state IS NULL OR v_state[m.owner] = 0
                      ORDER BY m.ord;
                END IF;
                COMMIT;
            END $$
            """,
            // What a claim answers with besides the row: the log's last sequence, the time of last change, the newest snapshot.
            """
            CREATE OR REPLACE FUNCTION %SCHEMA%.wf_claimed_tail(
                p_key bigint, p_updated bigint, p_updated_seq bigint, OUT o_last_seq bigint, OUT o_updated bigint, OUT o_last_snapshot bigint)
            LANGUAGE plpgsql STABLE AS $$
            BEGIN
                SELECT l.seq, CASE WHEN l.seq > p_updated_seq AND l.logged_ns <> 0 THEN l.logged_ns ELSE p_updated END
                  INTO o_last_seq, o_updated
                  FROM %SCHEMA%.wf_log l WHERE l.instance_key = p_key ORDER BY l.seq DESC LIMIT 1;
                SELECT COALESCE(max(s.seq), 0) INTO o_last_snapshot FROM %SCHEMA%.wf_snapshot s WHERE s.instance_key = p_key;
            END $$
            """,
            "DROP PROCEDURE %SCHEMA%.wf_claim",
            // A claim taken from a host holds its advisory lock, and answers with the instance as it left it.
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_claim(
                p_id text, p_old_pid integer, p_old_start bigint, p_old_token bigint, p_old_host bigint,
                p_pid integer, p_start bigint, p_token bigint, p_host bigint,
                INOUT o_key bigint, INOUT o_type text, INOUT o_codec text, INOUT o_status smallint, INOUT o_created bigint,
                INOUT o_updated bigint, INOUT o_last_seq bigint, INOUT o_last_snapshot bigint, INOUT o_code_version text)
            LANGUAGE plpgsql AS $$
            DECLARE
                v_updated_seq bigint;
            BEGIN
                IF p_old_host <> 0 THEN
                    PERFORM pg_advisory_xact_lock(p_old_host);
                END IF;
                UPDATE %SCHEMA%.wf_instance
                   SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
                 WHERE id = p_id AND owner_pid = p_old_pid AND owner_start = p_old_start AND owner_token = p_old_token
                   AND owner_host = p_old_host
                RETURNING instance_key, workflow_type, codec, status, created_ns, updated_ns, updated_seq, code_version
                     INTO o_key, o_type, o_codec, o_status, o_created, o_updated, v_updated_seq, o_code_version;
                IF o_key IS NOT NULL THEN
                    SELECT t.o_last_seq, t.o_updated, t.o_last_snapshot INTO o_last_seq, o_updated, o_last_snapshot
                      FROM %SCHEMA%.wf_claimed_tail(o_key, o_updated, v_updated_seq) t;
                END IF;
                COMMIT;
            END $$
            """,
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_claim_free(
                p_id text, p_pid integer, p_start bigint, p_token bigint, p_host bigint,
                INOUT o_key bigint, INOUT o_type text, INOUT o_codec text, INOUT o_status smallint, INOUT o_created bigint,
                INOUT o_updated bigint, INOUT o_last_seq bigint, INOUT o_last_snapshot bigint, INOUT o_code_version text)
            LANGUAGE plpgsql AS $$
            DECLARE
                v_updated_seq bigint;
            BEGIN
                UPDATE %SCHEMA%.wf_instance
                   SET owner_pid = p_pid, owner_start = p_start, owner_token = p_token, owner_host = p_host
                 WHERE id = p_id AND owner_pid = 0 AND owner_start = 0 AND owner_token = 0 AND owner_host = 0
                RETURNING instance_key, workflow_type, codec, status, created_ns, updated_ns, updated_seq, code_version
                     INTO o_key, o_type, o_codec, o_status, o_created, o_updated, v_updated_seq, o_code_version;
                IF o_key IS NOT NULL THEN
                    SELECT t.o_last_seq, t.o_updated, t.o_last_snapshot INTO o_last_seq, o_updated, o_last_snapshot
                      FROM %SCHEMA%.wf_claimed_tail(o_key, o_updated, v_updated_seq) t;
                END IF;
                COMMIT;
            END $$
            """,
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_create(
                p_id text, p_type text, p_codec text, p_status smallint, p_created bigint,
                p_pid integer, p_start bigint, p_token bigint, p_host bigint, p_records bytea[], p_code_version text,
                INOUT new_key bigint)
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO %SCHEMA%.wf_instance (id, workflow_type, codec, status, created_ns, updated_ns,
                                                  owner_pid, owner_start, owner_token, owner_host, code_version)
                VALUES (p_id, p_type, p_codec, p_status, p_created, p_created, p_pid, p_start, p_token, p_host, p_code_version)
                ON CONFLICT (id) DO NOTHING
                RETURNING instance_key INTO new_key;
                IF new_key IS NOT NULL THEN
                    INSERT INTO %SCHEMA%.wf_log (instance_key, seq, record, logged_ns)
                    SELECT new_key, t.ord, t.rec, p_created FROM unnest(p_records) WITH ORDINALITY AS t(rec, ord);
                END IF;
                COMMIT;
            END $$
            """,
            // A delete takes the instance from its host as a claim does.
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_delete(p_id text, INOUT existed boolean)
            LANGUAGE plpgsql AS $$
            DECLARE
                v_key bigint;
                v_host bigint;
            BEGIN
                existed := false;
                LOOP
                    SELECT owner_host INTO v_host FROM %SCHEMA%.wf_instance WHERE id = p_id;
                    EXIT WHEN NOT FOUND;
                    IF v_host <> 0 THEN
                        PERFORM pg_advisory_xact_lock(v_host);
                    END IF;
                    -- Another host may have claimed it in between: read again under that host's lock.
                    DELETE FROM %SCHEMA%.wf_instance WHERE id = p_id AND owner_host = v_host RETURNING instance_key INTO v_key;
                    IF v_key IS NOT NULL THEN
                        existed := true;
                        DELETE FROM %SCHEMA%.wf_log WHERE instance_key = v_key;
                        DELETE FROM %SCHEMA%.wf_snapshot WHERE instance_key = v_key;
                        EXIT;
                    END IF;
                END LOOP;
                COMMIT;
            END $$
            """,
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_put_snapshot(p_id text, p_seq bigint, p_state bytea, INOUT existed boolean)
            LANGUAGE plpgsql AS $$
            DECLARE
                v_key bigint;
            BEGIN
                SELECT instance_key INTO v_key FROM %SCHEMA%.wf_instance WHERE id = p_id;
                existed := v_key IS NOT NULL;
                IF existed THEN
                    INSERT INTO %SCHEMA%.wf_snapshot (instance_key, seq, state) VALUES (v_key, p_seq, p_state)
                    ON CONFLICT (instance_key, seq) DO UPDATE SET state = EXCLUDED.state;
                END IF;
                COMMIT;
            END $$
            """,
            """
            CREATE OR REPLACE PROCEDURE %SCHEMA%.wf_set_status(p_id text, p_status smallint, p_time bigint, p_failure text, INOUT changed boolean)
            LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE %SCHEMA%.wf_instance w SET status = p_status, updated_ns = p_time,
                       updated_seq = (SELECT COALESCE(max(l.seq), 0) FROM %SCHEMA%.wf_log l WHERE l.instance_key = w.instance_key),
                       failure = CASE WHEN p_status = 2 THEN p_failure END
                 WHERE id = p_id;
                changed := FOUND;
                COMMIT;
            END $$
            """,
        ],
        [
            // Format 17: the listing's pages along an index in byte order.
            "CREATE INDEX wf_instance_id_bytes ON %SCHEMA%.wf_instance (id COLLATE \"C\")",
        ],
    ]

    /// The statements that made a store of format `format` (1 to 17), as its build ran them.
    static func statements(through format: Int) -> [String] {
        PostgresSchema.bootstrap + migrations.prefix(format).joined()
    }
}
#endif
