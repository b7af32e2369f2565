// swift-tools-version: 6.1
// The benchmark runner: its own package, so the library's users and CI never build it.
import PackageDescription

let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../")],
    targets: [
        .executableTarget(
            name: "wf-bench",
            dependencies: [
                .product(name: "LMDB", package: "main"),
                .product(name: "Workflow", package: "main"),
                .product(name: "DurableWorkflow", package: "main"),
            ],
            swiftSettings: [.unsafeFlags(["-Ounchecked"], .when(configuration: .release))]
        ),
    ],
    swiftLanguageModes: [.v6]
)
