// swift-tools-version: 6.1
// The benchmark runner: its own package, so the library's users and CI never build it.
import PackageDescription

let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named, so that the products below are found whatever the clone's folder is called.
        // With the Postgres trait: the postgres scenario measures the PostgreSQL backend.
        .package(name: "DurableWorkflow", path: "../", traits: ["Postgres"]),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "wf-bench",
            dependencies: [
                .product(name: "LMDB", package: "DurableWorkflow"),
                .product(name: "Workflow", package: "DurableWorkflow"),
                .product(name: "DurableWorkflow", package: "DurableWorkflow"),
                .product(name: "WorkflowLMDB", package: "DurableWorkflow"),
                .product(name: "WorkflowSignals", package: "DurableWorkflow"),
                .product(name: "WorkflowFeedback", package: "DurableWorkflow"),
                .product(name: "WorkflowPostgres", package: "DurableWorkflow"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: [.unsafeFlags(["-Ounchecked"], .when(configuration: .release))]
        ),
    ],
    swiftLanguageModes: [.v6]
)
