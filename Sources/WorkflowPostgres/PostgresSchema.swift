#if Postgres
import Foundation

/// The store's tables and routines, from the SQL files of `Schema/` (embedded in the library):
/// `tables.sql` is the latest format's tables, `delta_NN.sql` the change of tables from
/// format NN-1 to NN (a format whose tables did not change has none), `routines/` one file per
/// function or procedure, each defined once, as the latest format has it.
///
/// A store's schema records its format (`wf_meta.format`). Opening a new store creates the
/// tables and routines; opening one of an older format applies the deltas after it, then
/// replaces every routine of the store with the latest; all in one transaction, under an
/// advisory lock so that hosts opening at once migrate once. A store of a newer format is refused.
///
/// A new format: ``format`` goes up by one; a change of tables goes into `tables.sql` (a new
/// column last in its table) and into `delta_NN.sql`; a routine is changed in its file; and the
/// tests' `PostgresSchemaHistory` gets the new format's migration, so that they keep comparing a
/// store migrated from every older format with a new one.
///
/// Every write is a `CALL` of a procedure that ends with `COMMIT`: the call returns only once its
/// transaction committed, in one round trip (postgres-nio reports an autocommit statement done
/// when it has run, before its transaction commits). Sequences stay dense without database
/// sequences: the engine supplies them and the commit procedure checks they continue the log.
enum PostgresSchema {
    /// The format this library writes: the number of the newest delta or routine change.
    static let format = 17

    /// The advisory lock key that serializes migrations (any hosts, any schema of the database).
    static let migrationLock: Int64 = 0x5746_4D49_4752_4154  // "WFMIGRAT"

    /// Creates the bookkeeping table if the schema is new.
    static let bootstrap = [
        "CREATE SCHEMA IF NOT EXISTS %SCHEMA%",
        "CREATE TABLE IF NOT EXISTS %SCHEMA%.wf_meta (name text PRIMARY KEY, value bigint NOT NULL)",
    ]

    /// The latest format's tables.
    static var tables: [String] { SQLScript(text(PackageResources.tables_sql)).statements }

    /// Format n's change of tables from format n-1, for the formats that changed them.
    static let deltas: [Int: [UInt8]] = [
        2: PackageResources.delta_02_sql,
        4: PackageResources.delta_04_sql,
        7: PackageResources.delta_07_sql,
        13: PackageResources.delta_13_sql,
        14: PackageResources.delta_14_sql,
        15: PackageResources.delta_15_sql,
        16: PackageResources.delta_16_sql,
        17: PackageResources.delta_17_sql,
    ]

    /// Every function and procedure, by name, as the latest format defines it.
    static let routines: [(name: String, source: [UInt8])] = [
        ("wf_create", PackageResources.wf_create_sql),
        ("wf_claimed_tail", PackageResources.wf_claimed_tail_sql),
        ("wf_claim", PackageResources.wf_claim_sql),
        ("wf_claim_free", PackageResources.wf_claim_free_sql),
        ("wf_set_status", PackageResources.wf_set_status_sql),
        ("wf_delete", PackageResources.wf_delete_sql),
        ("wf_put_snapshot", PackageResources.wf_put_snapshot_sql),
        ("wf_commit", PackageResources.wf_commit_sql),
        ("wf_host_renew", PackageResources.wf_host_renew_sql),
        ("wf_host_takes_over", PackageResources.wf_host_takes_over_sql),
        ("wf_host_leave", PackageResources.wf_host_leave_sql),
        ("wf_host_code_versions", PackageResources.wf_host_code_versions_sql),
        ("sig_prune", PackageResources.sig_prune_sql),
        ("sig_remove", PackageResources.sig_remove_sql),
        ("sig_apply_mark", PackageResources.sig_apply_mark_sql),
        ("sig_post", PackageResources.sig_post_sql),
        ("sig_register", PackageResources.sig_register_sql),
        ("sig_remove_consumers", PackageResources.sig_remove_consumers_sql),
        ("sig_mark", PackageResources.sig_mark_sql),
        ("app_table_named", PackageResources.app_table_named_sql),
    ]

    /// The statements that bring a store of format `current` (0: a new store) to ``format``.
    static func migration(from current: Int) -> [String] {
        guard current < format else { return [] }
        var statements: [String] = []
        if current == 0 {
            statements += tables
        } else {
            for version in (current + 1)...format {
                if let delta = deltas[version] { statements += SQLScript(text(delta)).statements }
            }
            statements.append(dropRoutines)
        }
        for routine in routines { statements += SQLScript(text(routine.source)).statements }
        return statements
    }

    /// Drops this library's routines in the schema, whatever their arguments (an older format's
    /// signature would stay beside the latest as an overload): they are then created anew.
    private static var dropRoutines: String {
        let names = routines.map { "'\($0.name)'" }.joined(separator: ", ")
        return """
            DO $$
            DECLARE
                v_routine record;
            BEGIN
                FOR v_routine IN
                    SELECT p.oid::regprocedure AS signature, p.prokind
                      FROM pg_proc p
                     WHERE p.pronamespace = '%SCHEMA%'::regnamespace AND p.proname = ANY (ARRAY[\(names)])
                LOOP
                    EXECUTE format('DROP %s %s', CASE v_routine.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                                   v_routine.signature);
                END LOOP;
            END $$
            """
    }

    private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// `statement` for the store in `schema`.
    static func sql(_ statement: String, schema: String) -> String {
        statement.replacingOccurrences(of: "%SCHEMA%", with: schema)
    }
}
#endif
