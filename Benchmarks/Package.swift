// swift-tools-version: 6.1
import PackageDescription

// Benchmarks for Herald, run with package-benchmark:
//   cd Benchmarks && swift package --allow-writing-to-package-directory benchmark
// See docs/performance.md for the figures.
let package = Package(
    name: "HeraldBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Named so that `package: "Herald"` works whatever the checkout's directory is called.
        .package(name: "Herald", path: ".."),
        // Only the MallocInterposer trait (allocation counts). Leaving out the default
        // RuntimeInterposer trait (ARC counters on Linux with Swift 6.3) also leaves out its
        // dependency, ordo-one/swift-runtime-interposer, which SwiftPM then does not resolve.
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CryptoCore",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HeraldCrypto", package: "Herald"),
            ],
            path: "Benchmarks/CryptoCore",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        )
    ]
)
