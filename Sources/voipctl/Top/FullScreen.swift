import Glibc
import VoipdSystem

/// The terminal as a full-screen program uses it, in plain ANSI (ECMA-48 and the xterm
/// private modes every terminal emulator has): the alternate screen, the cursor hidden,
/// input a key at a time. ``leave()`` puts everything back; ``draw(_:)`` writes only the
/// lines that changed since the last frame.
final class FullScreen {
    private let mode: SavedTerminalMode
    private let output: CInt
    private var shown: [String] = []
    private(set) var isActive = false
    private(set) var rows = 24
    private(set) var columns = 80

    private static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
    private static let leaveSequence = "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l"

    /// For the terminal on `input` (keys) and `output` (the screen).
    init(input: CInt, output: CInt) throws {
        mode = try SavedTerminalMode(saving: input)
        self.output = output
        readSize()
    }

    /// Switches to the alternate screen and character input; again after a stop, since
    /// the shell may have set its own mode meanwhile.
    func enter() throws {
        try mode.enterCharacterMode()
        isActive = true
        readSize()
        shown = []
        try write(Self.enterSequence)
    }

    /// Back to the screen and the input mode there were; errors are ignored, since this is
    /// also the way out when the terminal has gone.
    func leave() {
        guard isActive else { return }
        isActive = false
        try? write(Self.leaveSequence)
        try? mode.restore()
    }

    /// After a resize: the new size, and the next frame drawn whole.
    func resized() {
        readSize()
        invalidate()
    }

    /// The next frame is drawn whole, on a cleared screen.
    func invalidate() {
        shown = []
    }

    /// Writes the lines that differ from the frame on the screen, in one write.
    func draw(_ lines: [String]) throws {
        var text = shown.isEmpty ? "\u{1B}[H\u{1B}[2J" : ""
        for (index, line) in lines.enumerated() where index >= shown.count || shown[index] != line {
            text += "\u{1B}[\(index + 1);1H" + line
        }
        for index in lines.count..<max(shown.count, lines.count) {
            text += "\u{1B}[\(index + 1);1H\u{1B}[2K"
        }
        shown = lines
        if !text.isEmpty { try write(text) }
    }

    private func readSize() {
        if let size = try? Terminal.size(of: output), size.rows > 0, size.columns > 0 {
            (rows, columns) = size
        }
    }

    private func write(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    var ready = pollfd(fd: output, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                    continue
                }
                throw Errno.current("write(terminal)")
            }
            bytes = bytes.dropFirst(n)
        }
    }
}
