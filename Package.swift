// swift-tools-version: 6.1
import PackageDescription

// Layers, lowest first. A target depends only on targets of lower layers; the compiler
// holds imports to the declared dependencies (`--explicit-target-dependency-import-check`
// in the Makefile) and Tests/Architecture/check_layers.py fails on an upward dependency.
//
//   0 C shims        CFastCGI CLibPQ CSodium CCurl CZlib
//   1 foundations    FastCGI Database TidewayJSON Support
//   2 services       Schema Mail Drawing (SVG charts and maps)
//   3 web toolkit    Web (app, router, request context, errors, pages, templates, sessions,
//                    CSRF, tokens, health and metrics)
//   4 capabilities   Accounts Sync
//   5 capabilities   Events Blobs Chat Dashboards Administration Teams
//   6 capabilities   Boardings Patrol EventPublisher Operations Demo TidewayImport Backup
//   7 executables    tideway-worker (wiring of every route), tideway (the operator's tool)
//
// The client stack (what an app links, issue 16) is separate: it depends on no server target.
//   1 TidewayModels  Codable domain structs and JSON values
//   2 TidewayClient  the offline-first sync engine (GRDB store, outgoing queue, pull, auth)
//   7 tideway-device a device on the library, for tests, demos and load
//
// The worker links no code only the command-line tool uses (Patrol's jobs, the event
// publisher, migrations, compaction, demo data, backup and restore).
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

func module(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .target(name: name, dependencies: dependencies, swiftSettings: strict)
}

let package = Package(
    name: "Tideway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tideway-worker", targets: ["tideway-worker"]),
        .executable(name: "tideway", targets: ["tideway"]),
        .executable(name: "tideway-device", targets: ["tideway-device"]),
        .library(name: "TidewayModels", targets: ["TidewayModels"]),
        .library(name: "TidewayClient", targets: ["TidewayClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        // 0 C shims
        .systemLibrary(name: "CFastCGI", pkgConfig: nil, providers: [.apt(["libfcgi-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // 1 foundations
        module("FastCGI", ["CFastCGI"]),
        module("Database", ["CLibPQ"]),
        module("TidewayJSON", []),
        module("Support", ["CSodium", .product(name: "CoreMetrics", package: "swift-metrics")]),
        // 2 services
        module("Schema", ["TidewayJSON"]),
        module("Mail", ["Support", "CCurl"]),
        module("Drawing", ["Database", "Support"]),
        // 3 web toolkit
        module("Web", ["FastCGI", "Database", "TidewayJSON", "Support", "Schema", .product(name: "Mustache", package: "swift-mustache"),
                       .product(name: "CoreMetrics", package: "swift-metrics")]),
        // 4-6 capabilities
        module("Accounts", ["Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Sync", ["Web", "FastCGI", "Database", "TidewayJSON", "Support", "Schema", .product(name: "CoreMetrics", package: "swift-metrics")]),
        module("Events", ["Sync", "Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Blobs", ["CSodium", "Sync", "Web", "FastCGI", "Database", "TidewayJSON", "Support", .product(name: "CoreMetrics", package: "swift-metrics")]),
        module("Chat", ["Accounts", "Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Dashboards", ["Drawing", "Sync", "Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Administration", ["Accounts", "Sync", "Mail", "Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Teams", ["Drawing", "Sync", "Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Boardings", ["Dashboards", "Drawing", "Sync", "Schema", "Web", "FastCGI", "Database", "TidewayJSON", "Support"]),
        module("Patrol", ["Blobs", "Sync", "Web", "Database", "TidewayJSON", "Support", .product(name: "CoreMetrics", package: "swift-metrics")]),
        module("EventPublisher", ["Events", "Sync", "Web", "Database", "TidewayJSON", "Support", "CCurl", .product(name: "CoreMetrics", package: "swift-metrics")]),
        module("Operations", ["Sync", "Database", "Support"]),
        module("Demo", ["Accounts", "Sync", "Web", "Database", "TidewayJSON", "Support"]),
        // `tideway import` (issue 18): Atlas exports (BSON, Extended JSON) through the write path.
        module("TidewayImport", ["Administration", "Accounts", "Sync", "Schema", "Mail", "Web", "Database", "TidewayJSON",
                                 "Support", "CZlib"]),
        module("Backup", ["Blobs", "Database", "Support", "CSodium"]),
        // 7 executables: the wiring
        .executableTarget(
            name: "tideway-worker",
            dependencies: ["FastCGI", "Support", "Web", "Accounts", "Sync", "Events", "Blobs", "Chat", "Dashboards",
                           "Administration", "Boardings", "Mail", "Teams"],
            swiftSettings: strict),
        .executableTarget(
            name: "tideway",
            dependencies: ["Database", "Support", "Accounts", "Blobs", "Patrol", "EventPublisher", "Operations", "Demo",
                           "TidewayImport", "Mail", "Backup", "Web", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        // The client stack: no server target below it.
        module("TidewayModels", []),
        module("TidewayClient", ["TidewayModels", "CCurl", .product(name: "GRDB", package: "GRDB.swift")]),
        .executableTarget(
            name: "tideway-device",
            dependencies: ["TidewayClient", "TidewayModels", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        // Tests mirror Sources/: one test target per target.
        .testTarget(name: "FastCGITests", dependencies: ["FastCGI", "Web"], swiftSettings: strict),
        .testTarget(name: "DatabaseTests", dependencies: ["Database"], swiftSettings: strict),
        .testTarget(name: "TidewayJSONTests", dependencies: ["TidewayJSON"], swiftSettings: strict),
        .testTarget(name: "SchemaTests", dependencies: ["Schema", "TidewayJSON"], swiftSettings: strict),
        .testTarget(name: "MailTests", dependencies: ["Mail"], swiftSettings: strict),
        .testTarget(name: "SupportTests", dependencies: ["Support", .product(name: "CoreMetrics", package: "swift-metrics")], swiftSettings: strict),
        .testTarget(name: "WebTests", dependencies: ["Web", "Accounts", .product(name: "Mustache", package: "swift-mustache")],
                    swiftSettings: strict),
        .testTarget(name: "SyncTests", dependencies: ["Sync", "Database", "Support", "TidewayJSON"], swiftSettings: strict),
        .testTarget(name: "BlobsTests", dependencies: ["Blobs", "Support"], swiftSettings: strict),
        .testTarget(name: "DrawingTests", dependencies: ["Drawing"], swiftSettings: strict),
        .testTarget(name: "DashboardsTests", dependencies: ["Dashboards", "Drawing", "Web"], swiftSettings: strict),
        .testTarget(name: "AdministrationTests", dependencies: ["Administration"], swiftSettings: strict),
        .testTarget(name: "BoardingsTests", dependencies: ["Boardings", "TidewayJSON"], swiftSettings: strict),
        .testTarget(name: "PatrolTests", dependencies: ["Patrol"], swiftSettings: strict),
        .testTarget(name: "OperationsTests", dependencies: ["Operations", "Database"], swiftSettings: strict),
        .testTarget(name: "EventsTests", dependencies: ["Events", "Web"], swiftSettings: strict),
        .testTarget(name: "EventPublisherTests", dependencies: ["EventPublisher"], swiftSettings: strict),
        .testTarget(name: "BackupTests", dependencies: ["Backup"], swiftSettings: strict),
        .testTarget(name: "DemoTests", dependencies: ["Demo", "Support", "TidewayJSON"], swiftSettings: strict),
        .testTarget(name: "TidewayImportTests", dependencies: ["TidewayImport", "TidewayJSON"], swiftSettings: strict),
        .testTarget(name: "TidewayClientTests", dependencies: ["TidewayClient", "TidewayModels"], swiftSettings: strict),
        // The worker's wiring, driven in process: a table of requests through the whole app.
        .testTarget(name: "WorkerTests", dependencies: ["tideway-worker", "FastCGI", "Support", "TidewayJSON", "Web"],
                    swiftSettings: strict),
    ]
)
