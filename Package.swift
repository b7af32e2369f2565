// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "DurableWorkflow",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LMDB", targets: ["LMDB"]),
        .library(name: "Workflow", targets: ["Workflow"]),
        .library(name: "WorkflowTesting", targets: ["WorkflowTesting"]),
        .library(name: "WorkflowLogging", targets: ["WorkflowLogging"]),
        .library(name: "WorkflowStorage", targets: ["WorkflowStorage"]),
        // The lock type the examples use (a pthread mutex: ThreadSanitizer sees it, unlike
        // Synchronization.Mutex on Linux), so that code copied from them builds.
        .library(name: "WorkflowLocks", targets: ["WorkflowLocks"]),
        .library(name: "WorkflowLMDB", targets: ["WorkflowLMDB"]),
        .library(name: "DurableWorkflow", targets: ["DurableWorkflow"]),
        .library(name: "WorkflowSignals", targets: ["WorkflowSignals"]),
        .library(name: "WorkflowFeedback", targets: ["WorkflowFeedback"]),
        .library(name: "WorkflowCLI", targets: ["WorkflowCLI"]),
        .library(name: "WorkflowPostgres", targets: ["WorkflowPostgres"]),
        .library(name: "WorkflowService", targets: ["WorkflowService"]),
        .library(name: "WorkflowConsole", targets: ["WorkflowConsole"]),
        .executable(name: "wfctl", targets: ["wfctl"]),
    ],
    traits: [
        // Off by default: LMDB users never build postgres-nio (swift-nio, swift-nio-ssl, swift-crypto).
        .trait(name: "Postgres", description: "The PostgreSQL backend, WorkflowPostgres (builds postgres-nio)."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.3.0"),
        // The console's HTTP server (WorkflowConsole, `wfctl serve`), without its optional traits.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: []),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // `swift package generate-documentation` (the DocC catalogs); a plugin, built only when run.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The system liblmdb (Debian: liblmdb-dev), found through pkg-config.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // A safe Swift layer over LMDB: closure-scoped transactions, typed errors, map growth.
        .target(name: "LMDB", dependencies: ["CLMDB", "CLMDBSupport", "WorkflowLocks"]),
        // What the LMDB layer does in C: the store walk's child process (forked from a service, it
        // must take no lock of the Swift runtime's that another thread may have held at the fork)
        // and the store's writer lock (a robust mutex shared by every process, with a deadline).
        .target(name: "CLMDBSupport", dependencies: ["CLMDB"]),
        // The project's one lock type (pthread-based: visible to ThreadSanitizer).
        .target(name: "WorkflowLocks"),
        // The runtime's and the engine's raw storage, behind typed slots and handles (internal:
        // no product; docs/ARCHITECTURE.md lists each construct, why it pays and who owns it).
        .target(name: "WorkflowMemory"),
        // The in-memory runtime: workflows, actions, sinks, children, workers, side effects, host.
        .target(name: "Workflow", dependencies: ["WorkflowLocks", "WorkflowMemory"]),
        // Render and action testers for users' own tests (works from Swift Testing and XCTest), and the replay gate over exports.
        .target(name: "WorkflowTesting", dependencies: ["Workflow", "WorkflowLocks", "DurableWorkflow", "WorkflowSignals"]),
        // The storage protocol the engine speaks, knowing no backend, and the in-memory backend.
        .target(name: "WorkflowStorage", dependencies: ["WorkflowLocks"]),
        // The durable engine: every applied action in a store's log, state rebuilt by replay.
        // The payload codecs: the binary format (docs/binary-codec.md) and its routes, JSON.
        .target(name: "WorkflowCodec", dependencies: ["WorkflowLocks"]),
        .target(
            name: "DurableWorkflow",
            dependencies: [
                "Workflow", "WorkflowStorage", "WorkflowLocks", "WorkflowCodec", "WorkflowMemory",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The LMDB backend (the embedded default) and `WorkflowStore.open(path:)`.
        .target(
            name: "WorkflowLMDB",
            dependencies: [
                "DurableWorkflow", "WorkflowSignals", "WorkflowStorage", "LMDB", "WorkflowLocks",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // The PostgreSQL backend: several hosts on one database. Empty unless the `Postgres` trait is on.
        .target(
            name: "WorkflowPostgres",
            dependencies: [
                "DurableWorkflow", "WorkflowStorage", "WorkflowLocks",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Postgres"])),
            ],
            // The schema as SQL files, compiled into the library (a service ships one binary).
            resources: [.embedInCode("Schema")]
        ),
        // Persistent signals: every version in the log, each consumer sees each version once.
        .target(
            name: "WorkflowSignals",
            dependencies: [
                "DurableWorkflow", "Workflow", "WorkflowStorage", "WorkflowLocks",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Feedback loops: the Mealy-machine front end, in memory and durable, on the same runtime.
        .target(name: "WorkflowFeedback", dependencies: ["Workflow", "DurableWorkflow", "WorkflowLocks"]),
        // A store's instances as a swift-service-lifecycle Service: resume at start, graceful shutdown.
        .target(
            name: "WorkflowService",
            dependencies: [
                "DurableWorkflow", "Workflow", "WorkflowLocks", "WorkflowStorage",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The inspect/replay tool as a library (a service registers its types) and the shipped wfctl.
        .target(
            name: "WorkflowCLI",
            dependencies: [
                "DurableWorkflow", "WorkflowSignals", "Workflow", "WorkflowStorage", "WorkflowLMDB", "WorkflowPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The operator console in the browser (`wfctl serve`): its own target, so that a service's
        // own wfctl without `serve`, and every service, compiles no HTTP server.
        .target(
            name: "WorkflowConsole",
            dependencies: [
                "WorkflowCLI", "DurableWorkflow", "WorkflowSignals", "WorkflowStorage", "WorkflowLocks",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The page, its style and its script, compiled into the library (served from the binary).
            resources: [.embedInCode("Assets")]
        ),
        .executableTarget(name: "wfctl", dependencies: ["WorkflowCLI", "WorkflowConsole", "WorkflowExamples", "DurableWorkflow", "WorkflowSignals"]),
        // A swift-log observer.
        .target(name: "WorkflowLogging", dependencies: ["Workflow", .product(name: "Logging", package: "swift-log")]),

        // Examples: the workflows the demos, the showcase and the shipped wfctl use.
        .target(name: "WorkflowExamples", dependencies: ["Workflow", "DurableWorkflow", "WorkflowSignals"]),
        .executableTarget(
            name: "order-service",
            dependencies: [
                "DurableWorkflow", "WorkflowLMDB", "Workflow", "WorkflowSignals", "WorkflowExamples", "WorkflowService",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/OrderService"
        ),
        .executableTarget(name: "counter-demo", dependencies: ["DurableWorkflow", "WorkflowLMDB", "Workflow", "WorkflowExamples"], path: "Examples/CounterDemo"),
        .executableTarget(name: "signal-demo", dependencies: ["WorkflowSignals", "WorkflowLMDB"], path: "Examples/SignalDemo"),
        .executableTarget(
            name: "hosts-demo", dependencies: ["DurableWorkflow", "Workflow", "WorkflowExamples", "WorkflowPostgres"], path: "Examples/HostsDemo"
        ),
        .executableTarget(
            name: "showcase", dependencies: ["DurableWorkflow", "WorkflowLMDB", "Workflow", "WorkflowSignals", "WorkflowExamples", "WorkflowLocks"],
            path: "Examples/Showcase"
        ),

        // A helper executable that tests spawn as a real child process (crash and multi-process tests).
        // Test helpers shared by every test target and the child-process helper.
        .target(name: "TestSupport", dependencies: ["WorkflowLocks", .product(name: "Logging", package: "swift-log")], path: "Tests/TestSupport"),
        .target(
            name: "TestWorkflows",
            dependencies: ["Workflow", "DurableWorkflow", "WorkflowSignals", "WorkflowFeedback", "WorkflowLocks", "TestSupport"],
            path: "Tests/Fixtures/TestWorkflows"
        ),
        .executableTarget(
            name: "wf-test-child",
            dependencies: [
                "LMDB", "Workflow", "DurableWorkflow", "WorkflowLMDB", "WorkflowPostgres", "WorkflowSignals", "WorkflowFeedback", "TestSupport",
                "TestWorkflows", "WorkflowLocks", "WorkflowService", "WorkflowTesting", "WorkflowCLI",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/Fixtures/WFTestChild"
        ),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB", "TestSupport", "WorkflowLocks", "wf-test-child"]),
        // The storage contract, run over every backend.
        .testTarget(
            name: "WorkflowStorageTests",
            dependencies: [
                "WorkflowStorage", "WorkflowLMDB", "WorkflowPostgres", "WorkflowSignals", "LMDB", "DurableWorkflow", "Workflow", "TestSupport",
                "TestWorkflows", "WorkflowLocks", "wf-test-child", "WorkflowService",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "WorkflowLocksTests", dependencies: ["WorkflowLocks"]),
        .testTarget(
            name: "WorkflowServiceTests",
            dependencies: [
                "WorkflowService", "DurableWorkflow", "Workflow", "WorkflowLMDB", "TestSupport", "TestWorkflows", "wf-test-child",
                "order-service", "WorkflowExamples", "WorkflowSignals",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "DurableWorkflowTests",
            dependencies: [
                "DurableWorkflow", "Workflow", "WorkflowTesting", "WorkflowStorage", "WorkflowLMDB", "LMDB", "TestSupport", "TestWorkflows",
                "wf-test-child", "counter-demo", "WorkflowLocks", "WorkflowCodec",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "WorkflowSignalsTests",
            dependencies: [
                "WorkflowSignals", "DurableWorkflow", "WorkflowLMDB", "Workflow", "LMDB", "TestSupport", "TestWorkflows", "wf-test-child",
                "signal-demo", "WorkflowLocks", "WorkflowTesting",
            ]
        ),
        .testTarget(
            name: "WorkflowFeedbackTests",
            dependencies: ["WorkflowFeedback", "DurableWorkflow", "WorkflowLMDB", "Workflow", "TestSupport", "TestWorkflows", "wf-test-child", "WorkflowLocks"]
        ),
        .testTarget(
            name: "WorkflowCLITests",
            dependencies: [
                "WorkflowCLI", "WorkflowExamples", "DurableWorkflow", "WorkflowLMDB", "WorkflowPostgres", "WorkflowSignals", "Workflow", "LMDB",
                "WorkflowFeedback", "TestSupport",
                "TestWorkflows", "wfctl", "counter-demo", "showcase", "hosts-demo", "order-service", "wf-test-child", "WorkflowService", "WorkflowStorage",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The console's JSON API over HTTP, its security, and `wfctl serve` as a separate process.
        .testTarget(
            name: "WorkflowConsoleTests",
            dependencies: [
                "WorkflowConsole", "WorkflowCLI", "WorkflowExamples", "DurableWorkflow", "WorkflowLMDB", "WorkflowPostgres", "WorkflowSignals",
                "Workflow", "LMDB", "TestSupport", "wfctl", "counter-demo", "WorkflowLocks",
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .testTarget(name: "WorkflowTests", dependencies: ["Workflow", "WorkflowTesting", "WorkflowLogging", "TestSupport", "TestWorkflows", "wf-test-child", "WorkflowLocks"]),
        // The raw storage's own tests (also run under AddressSanitizer by tools/test --sanitize address).
        .testTarget(name: "WorkflowMemoryTests", dependencies: ["WorkflowMemory", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
