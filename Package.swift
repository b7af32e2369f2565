// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "DurableWorkflow",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LMDB", targets: ["LMDB"]),
    ],
    targets: [
        // The system liblmdb (Debian: liblmdb-dev), found through pkg-config.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // A safe Swift layer over LMDB: closure-scoped transactions, typed errors, map growth.
        .target(name: "LMDB", dependencies: ["CLMDB"]),

        // A helper executable that tests spawn as a real child process (crash and multi-process tests).
        // Test helpers shared by every test target and the child-process helper.
        .target(name: "TestSupport", dependencies: [], path: "Tests/TestSupport"),
        .executableTarget(
            name: "wf-test-child",
            dependencies: ["LMDB", "TestSupport"],
            path: "Tests/Fixtures/WFTestChild"
        ),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB", "TestSupport", "wf-test-child"]),
    ],
    swiftLanguageModes: [.v6]
)
