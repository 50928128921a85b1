import Glibc
import VoipdSystem

/// Where the processes under test run, as the floor's `-c` sets it: the same number means
/// the same placement for the floor and for voipd.
enum CPUPlacement: Int, CaseIterable {
    /// Left to the scheduler (`-c 0`).
    case scheduler = 0
    /// Everything on CPU 0 (`-c 1`): no cross-CPU wake-ups.
    case oneCPU = 1
    /// The supervisor (voipd) on CPU 0, the peer and the apps on CPU 1 (`-c 2`).
    case split = 2

    /// The CPU voipd runs on (nil: any).
    var supervisorCPU: Int? { self == .scheduler ? nil : 0 }

    /// The CPU the peer (this process) and the apps run on (nil: any).
    var peerCPU: Int? {
        switch self {
        case .scheduler: return nil
        case .oneCPU: return 0
        case .split: return 1
        }
    }
}

/// `sched_setaffinity(2)` for the calling thread; what it starts afterwards inherits the
/// mask. Glibc's module does not export this GNU call, so it is looked up by name.
func pinCurrentThread(to cpu: Int?) throws {
    typealias SetAffinity = @convention(c) (pid_t, Int, UnsafeRawPointer?) -> CInt
    guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "sched_setaffinity") else {
        throw Errno(ENOSYS, call: "dlsym(sched_setaffinity)")
    }
    let setAffinity = unsafeBitCast(symbol, to: SetAffinity.self)
    var mask = cpu_set_t()
    withUnsafeMutableBytes(of: &mask) { bytes in
        guard let cpu else {
            // Every CPU: the kernel keeps those that exist and are allowed.
            for index in bytes.indices { bytes[index] = 0xff }
            return
        }
        bytes[cpu / 8] |= UInt8(1) << UInt8(cpu % 8)
    }
    _ = try valueOrErrno("sched_setaffinity(\(cpu.map(String.init) ?? "all"))") {
        setAffinity(0, MemoryLayout<cpu_set_t>.size, &mask)
    }
}
