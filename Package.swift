// swift-tools-version: 6.1
import PackageDescription

// Dependencies point one way: C shims ← FastCGI / Database ← TidewayCore ← executables.
let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "Tideway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tideway-worker", targets: ["tideway-worker"]),
        .executable(name: "tideway", targets: ["tideway"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.0.0"),
    ],
    targets: [
        .systemLibrary(name: "CFastCGI", pkgConfig: nil, providers: [.apt(["libfcgi-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "FastCGI", dependencies: ["CFastCGI"], swiftSettings: strict),
        .target(name: "Database", dependencies: ["CLibPQ"], swiftSettings: strict),
        .target(
            name: "TidewayCore",
            dependencies: [
                "FastCGI", "Database", "CSodium", "CCurl",
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            swiftSettings: strict),
        // `tideway import` (issue 18): readers of Atlas exports and the mapping to Tideway.
        .target(name: "TidewayImport", dependencies: ["TidewayCore", "Database", "CZlib"], swiftSettings: strict),
        .executableTarget(name: "tideway-worker", dependencies: ["TidewayCore"], swiftSettings: strict),
        .executableTarget(
            name: "tideway",
            dependencies: ["TidewayCore", "TidewayImport", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            // main.swift holds `@main`, and the tool has more than one file (Import.swift).
            swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]),
        .testTarget(name: "TidewayCoreTests", dependencies: ["TidewayCore"], swiftSettings: strict),
        .testTarget(name: "DatabaseTests", dependencies: ["Database", "TidewayCore"], swiftSettings: strict),
        .testTarget(name: "TidewayImportTests", dependencies: ["TidewayImport", "TidewayCore"], swiftSettings: strict),
    ]
)
