import CVoipd
import Glibc

/// A terminal on one of the standard descriptors, which belong to the process and are never
/// closed here: whether it is one, its size, and the input mode a full-screen program needs.
public enum Terminal {
    /// Whether `fd` is a terminal (`isatty`).
    public static func isTerminal(_ fd: CInt) -> Bool { isatty(fd) == 1 }

    /// The size in character cells (`ioctl(TIOCGWINSZ)`).
    public static func size(of fd: CInt) throws -> (rows: Int, columns: Int) {
        var rows: UInt16 = 0
        var columns: UInt16 = 0
        _ = try valueOrErrno("ioctl(TIOCGWINSZ)") { voipd_terminal_size(fd, &rows, &columns) }
        return (Int(rows), Int(columns))
    }
}

/// A terminal's input mode as it was before a full-screen program changed it: saved once,
/// and put back by ``restore()`` however often the program changes it in between.
public struct SavedTerminalMode: Sendable {
    public let fd: CInt
    private let saved: termios

    /// Saves the mode of `fd`'s terminal (`tcgetattr`).
    public init(saving fd: CInt) throws {
        var mode = termios()
        _ = try valueOrErrno("tcgetattr") { tcgetattr(fd, &mode) }
        self.fd = fd
        saved = mode
    }

    /// Makes input arrive a byte at a time, unechoed and untranslated, with `read` never
    /// waiting (`VMIN` and `VTIME` 0: `poll` says when there is input). The keys that send
    /// signals (^C, ^Z, ^\) still send them, so the program ends or stops the way any other
    /// does. Made from the saved mode, so it can be applied again after a shell changed it.
    public func enterCharacterMode() throws {
        var mode = saved
        mode.c_lflag &= ~tcflag_t(ICANON | ECHO | IEXTEN)
        mode.c_iflag &= ~tcflag_t(ICRNL | IXON | INLCR | IGNCR)
        withUnsafeMutableBytes(of: &mode.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        _ = try valueOrErrno("tcsetattr") { tcsetattr(fd, TCSANOW, &mode) }
    }

    /// Puts the saved mode back, once what was written has gone out (`TCSADRAIN`).
    public func restore() throws {
        var mode = saved
        _ = try valueOrErrno("tcsetattr") { tcsetattr(fd, TCSADRAIN, &mode) }
    }
}
