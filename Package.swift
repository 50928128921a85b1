// swift-tools-version:6.0
// voipd: the iOS multitasking model for VoIP apps, on Linux.
// No package dependencies: the toolchain only, plus the project's small C targets (CVoipd and
// CVoipdSpawn: what Swift cannot do itself; libvoipd: the C client library).
import PackageDescription

let package = Package(
    name: "voipd",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "voipd", targets: ["voipd"]),
        .executable(name: "voipctl", targets: ["voipctl"]),
        .executable(name: "softphone", targets: ["softphone"]),
        .executable(name: "voip-demo", targets: ["voip-demo"]),
        .executable(name: "voipd-bench", targets: ["voipd-bench"]),
        .executable(name: "voipd-transfer", targets: ["voipd-transfer"]),
        .library(name: "VoipClient", targets: ["VoipClient"]),
        // libvoipd for C and C++ apps: libvoipd-client.a, only C and libc (no Swift runtime).
        // Deploy/ makes the installed libvoipd.so.1, libvoipd.a and voipd.pc of it.
        .library(name: "voipd-client", type: .static, targets: ["libvoipd"]),
    ],
    targets: [
        // Headers, CMSG_* wrappers, constants and raw syscalls Swift cannot import. No logic.
        .target(name: "CVoipd"),
        // The child side of a spawn, between clone and execve, where only raw system calls are safe.
        .target(name: "CVoipdSpawn"),
        // The client side of the protocol in C (include/voipd.h; libvoipd(3)). Pure C11.
        .target(name: "libvoipd"),
        // The words apps, the protocol and the daemon share: app states, events, termination
        // reasons, instants on the monotonic clock. No dependencies.
        .target(name: "VoipdVocabulary"),
        // Owned descriptors and thin syscall wrappers that throw Errno.
        .target(name: "VoipdSystem", dependencies: ["CVoipd", "CVoipdSpawn", "VoipdVocabulary"]),
        // The wire protocol: framing and message bodies (docs/PROTOCOL.md). Pure: no I/O.
        .target(name: "VoipdProtocol", dependencies: ["VoipdVocabulary", "VoipdTransfers"]),
        // Whole frames over control connections: the protocol's socket side.
        .target(name: "VoipdProtocolIO", dependencies: ["VoipdProtocol", "VoipdSystem"]),
        // The pure lifecycle state machine: events in, actions out, no system calls.
        .target(name: "VoipdLifecycle", dependencies: ["VoipdVocabulary"]),
        // Adopting the VoIP sockets of programs that do not speak voipd's protocol: adoption
        // rules and their `sip` preset, the report of what they took, the quiet detector.
        // Pure: the sockets and activity samples come from VoipdSystem (docs/LIFECYCLE.md,
        // "Adopted programs").
        .target(name: "VoipdAdoption", dependencies: ["VoipdVocabulary"]),
        // What the daemon runs with: the configuration file, the apps' manifests, the command
        // line, and their validation (docs/CONFIGURATION.md). Values; reads files, nothing else.
        .target(name: "VoipdConfiguration", dependencies: ["VoipdLifecycle", "VoipdProtocol", "VoipdSystem", "VoipdAdoption", "VoipdTransfers", "VoipdVocabulary"]),
        // The daemon: one thread, one epoll loop, performing the state machine's actions.
        .target(name: "VoipdDaemon", dependencies: ["VoipdConfiguration", "VoipdSystem", "VoipdProtocol", "VoipdProtocolIO", "VoipdLifecycle", "VoipdVocabulary", "VoipdAdoption",
                                                    "VoipdTransfers", "VoipdTransferService"]),
        // Background transfers' pure logic: tasks, scheduling, the resume rate limiter, the
        // agent's messages. No system calls (docs/TRANSFERS.md).
        .target(name: "VoipdTransfers", dependencies: ["VoipdVocabulary"]),
        // The transfer service around the engine: its durable store, and the agents it
        // starts and speaks to without blocking, for a host loop (voipd's) to drive.
        .target(name: "VoipdTransferService", dependencies: ["VoipdTransfers", "VoipdSystem", "VoipdVocabulary"]),
        // The client library for apps and for voipctl.
        .target(name: "VoipClient", dependencies: ["VoipdSystem", "VoipdProtocol", "VoipdProtocolIO", "VoipdVocabulary", "VoipdTransfers"]),
        // SIP over TCP and UDP: messages, a user agent's pieces, and an embedded registrar/proxy;
        // its sockets are the system layer's.
        .target(name: "SIP", dependencies: ["VoipdSystem", "VoipdVocabulary"]),

        .executableTarget(name: "voipd", dependencies: ["VoipdDaemon", "VoipdProtocol"]),
        .executableTarget(name: "voipctl", dependencies: ["VoipClient", "VoipdProtocol", "VoipdVocabulary", "VoipdSystem"]),
        // The transfer agent: HTTP(S) with FoundationNetworking's URLSession, run by voipd as
        // the app's user, so that voipd itself never links FoundationNetworking.
        .executableTarget(name: "voipd-transfer", dependencies: ["VoipdTransfers", "VoipdSystem", "VoipdVocabulary", "CVoipd"]),
        // What tests and benchmarks set up for themselves: temporary directories, files and
        // waits for them, nginx; as root, swap files and zram devices.
        .target(name: "VoipdTestSupport", dependencies: ["VoipdSystem", "VoipdVocabulary", "CVoipd"]),
        // The test app's commands and reports, shared by the app and the tests that drive it,
        // and the patterned memory it fills.
        .target(name: "TestAppMessages", dependencies: ["VoipdVocabulary", "VoipdSystem"]),
        .executableTarget(name: "voip-test-app", dependencies: ["VoipClient", "TestAppMessages"]),
        .executableTarget(name: "softphone", dependencies: ["VoipClient", "SIP", "VoipdSystem"]),
        .executableTarget(name: "voip-demo", dependencies: ["VoipClient", "SIP", "VoipdSystem", "VoipdTestSupport", "voipd", "softphone"]),
        .executableTarget(name: "voipd-bench", dependencies: ["VoipClient", "VoipdSystem", "VoipdVocabulary", "VoipdAdoption", "SIP", "softphone", "VoipdTransferService", "VoipdTransfers", "voipd-transfer",
                                                            "VoipdTestSupport", "TestAppMessages"]),

        .testTarget(name: "VoipdLifecycleTests", dependencies: ["VoipdLifecycle", "VoipdVocabulary"]),
        .testTarget(name: "VoipdTransfersTests", dependencies: ["VoipdTransfers"]),
        .testTarget(name: "VoipdAdoptionTests", dependencies: ["VoipdAdoption", "VoipdVocabulary", "VoipdSystem"]),
        .testTarget(name: "VoipdTransferServiceTests", dependencies: ["VoipdTransferService", "VoipdTransfers", "VoipdSystem", "VoipdVocabulary", "VoipdTestSupport", "voipd-transfer"]),
        .testTarget(name: "VoipdProtocolTests", dependencies: ["VoipdProtocol", "VoipdVocabulary", "VoipdTransfers"]),
        .testTarget(name: "VoipdDaemonTests", dependencies: ["VoipdAdoption", "VoipdDaemon", "VoipdConfiguration", "VoipdLifecycle", "VoipdProtocol", "VoipdSystem",
                                                        "VoipdTestSupport", "VoipdTransfers", "VoipdVocabulary"]),
        .testTarget(name: "SIPTests", dependencies: ["SIP", "VoipdSystem", "VoipdTestSupport", "VoipdVocabulary"]),
        .testTarget(
            name: "VoipdIntegrationTests",
            dependencies: ["VoipClient", "VoipdSystem", "VoipdVocabulary", "VoipdAdoption", "VoipdDaemon", "SIP", "TestAppMessages", "VoipdTestSupport", "voipd", "voipctl", "voip-test-app",
                           "softphone", "voip-demo"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
