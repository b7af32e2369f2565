#if Postgres
import Foundation
import TestSupport
import Testing
@testable import WorkflowPostgres
import WorkflowStorage

/// The schema's SQL files: how a script is cut into statements.
@Suite("The PostgreSQL schema's scripts: cut into statements")
struct SQLScriptTests {
    @Test("a script is cut at each semicolon outside strings, quoted names, dollar-quoted bodies and comments; comment-only pieces are no statements")
    func statements() {
        let script = SQLScript("""
            -- a comment; with a semicolon
            CREATE TABLE t (a text DEFAULT 'x;y''z', "b;c" int);
            /* a block; /* nested; */ still a comment; */
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
            CREATE FUNCTION g() RETURNS text LANGUAGE plpgsql AS $body$ BEGIN RETURN '$$;'; END $body$;
            PREPARE p AS SELECT $1::int;
            -- the end; nothing after
            """)
        #expect(script.statements == [
            "-- a comment; with a semicolon\nCREATE TABLE t (a text DEFAULT 'x;y''z', \"b;c\" int)",
            "/* a block; /* nested; */ still a comment; */\nCREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$",
            "CREATE FUNCTION g() RETURNS text LANGUAGE plpgsql AS $body$ BEGIN RETURN '$$;'; END $body$",
            "PREPARE p AS SELECT $1::int",
        ])
    }

    @Test("a last statement without its semicolon is kept; an empty script has none")
    func unterminated() {
        #expect(SQLScript("SELECT 1; SELECT 2").statements == ["SELECT 1", "SELECT 2"])
        #expect(SQLScript("  \n-- only a comment\n").statements.isEmpty)
    }

    @Test("every schema file cuts into statements, and each routine file defines its routine once")
    func schemaFiles() {
        let tablesFile = String(decoding: PackageResources.tables_sql, as: UTF8.self)
        let creates = tablesFile.split(separator: "\n").filter { $0.hasPrefix("CREATE ") }.count
        #expect(PostgresSchema.tables.count == creates, "\(PostgresSchema.tables.count) statements in tables.sql, \(creates) CREATE lines")
        for routine in PostgresSchema.routines {
            let statements = SQLScript(String(decoding: routine.source, as: UTF8.self)).statements
            #expect(statements.count == 1, "\(routine.name): \(statements.count) statements")
            #expect(statements.first?.contains("CREATE OR REPLACE") == true && statements.first?.contains("%SCHEMA%.\(routine.name)(") == true,
                    "\(routine.name)")
        }
        #expect(PostgresSchema.deltas.keys.allSatisfy { $0 > 1 && $0 <= PostgresSchema.format })
    }
}

/// The schema a store gets, new or migrated (issue 60, point 2).
@Suite("The PostgreSQL schema: a new store and one migrated from every older format are the same", .serialized,
       .enabled(if: PostgresTestServer.configuration != nil))
struct PostgresSchemaTests {
    /// `pg_dump --schema-only` of `schema`, with its name replaced by `SCHEMA`, and without the
    /// dump's own comments and its `\restrict` lines (their key is new with each dump).
    static func dump(_ schema: String) throws -> [String] {
        let configuration = try #require(PostgresTestServer.configuration)
        let binaries = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let pgDump = try #require(
            binaries.sorted { $0.compare($1, options: .numeric) == .orderedAscending }.reversed()
                .map { "/usr/lib/postgresql/\($0)/bin/pg_dump" }.first { FileManager.default.isExecutableFile(atPath: $0) },
            "pg_dump of the server's PostgreSQL (tools/test installs it)")
        let child = try ChildProcess(
            ["--schema-only", "--no-owner", "--no-privileges", "-n", schema, "-h", configuration.host, "-p", "\(configuration.port)",
             "-U", configuration.username, configuration.database],
            executable: pgDump, environment: ["PGPASSWORD": configuration.password ?? ""], mergeStandardError: true)
        let lines = child.readRemainingLines(timeout: .seconds(60))
        #expect(try child.waitForExit() == 0, "pg_dump: \(lines.suffix(3))")
        return lines.filter { !$0.hasPrefix("--") && !$0.isEmpty && !$0.hasPrefix("\\restrict") && !$0.hasPrefix("\\unrestrict") }.map { $0.replacingOccurrences(of: schema, with: "SCHEMA") }
    }

    /// A store of `format` made as the build of that format made it.
    static func olderStore(format: Int) throws -> PostgresConfiguration {
        var configuration = try #require(PostgresTestServer.configuration)
        configuration.schema = PostgresTestServer.freshSchema()
        for statement in PostgresSchemaHistory.statements(through: format) {
            try PostgresBackendTests.sql(PostgresSchema.sql(statement, schema: configuration.schema))
        }
        try PostgresBackendTests.sql("INSERT INTO \(configuration.schema).wf_meta (name, value) VALUES ('format', \(format))")
        return configuration
    }

    @Test("pg_dump --schema-only of a new store equals that of a store of each older format migrated at open, and of one the latest build made")
    func migratedEqualsNew() throws {
        var fresh = try #require(PostgresTestServer.configuration)
        fresh.schema = PostgresTestServer.freshSchema()
        _ = try PostgresStorage.open(fresh)
        let expected = try Self.dump(fresh.schema)
        #expect(expected.count > 300, "\(expected.count) lines")
        for format in 1...PostgresSchema.format {
            let older = try Self.olderStore(format: format)
            let storage = try PostgresStorage.open(older)
            #expect(try storage.statistics().formatVersion == UInt32(PostgresSchema.format))
            let migrated = try Self.dump(older.schema)
            let first = zip(expected, migrated).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(first == nil && migrated.count == expected.count,
                    "format \(format): \(migrated.count) lines against \(expected.count); first difference: \(first.map { "'\(migrated[$0])' for '\(expected[$0])'" } ?? "in length")")
        }
    }

    @Test("a store holds each routine of the schema files once: no overload an older format left")
    func routinesOnce() throws {
        let older = try Self.olderStore(format: 1)
        _ = try PostgresStorage.open(older)
        let rows = try PostgresBackendTests.sql(
            "SELECT p.proname FROM pg_proc p WHERE p.pronamespace = '\(older.schema)'::regnamespace ORDER BY p.proname")
        let names = try rows.map { try $0.decode(String.self) }
        #expect(names == PostgresSchema.routines.map(\.name).sorted())
    }
}
#endif
