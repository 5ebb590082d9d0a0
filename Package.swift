// swift-tools-version: 6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldCrypto", targets: ["HeraldCrypto"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"5.0.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // libsodium from the system (Debian: libsodium-dev), found through pkg-config.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // The crypto core: key agreement, the envelope, contents, budget, keys at rest.
        // Depends on libsodium only: no NIO, no Foundation networking.
        .target(
            name: "HeraldCrypto",
            dependencies: ["CSodium"],
            swiftSettings: swiftSettings
        ),
        // The `herald` subcommands, as a library so tests can run them in-process.
        .target(
            name: "HeraldCommands",
            dependencies: [
                "HeraldCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald",
            dependencies: ["HeraldCommands"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCryptoTests",
            dependencies: [
                "HeraldCrypto",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCommandsTests",
            dependencies: [
                "HeraldCommands",
                "HeraldCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
