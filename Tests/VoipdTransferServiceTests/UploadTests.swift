import Foundation
import Glibc
import Testing
import VoipdSystem
import VoipdTestSupport
import VoipdTransferService
import VoipdTransfers

/// Uploads from files through the agent to nginx's DAV module.
@Suite("Uploads with nginx", .serialized, .enabled(if: NginxServer.shouldRun, "needs nginx (and setpriv as root)"))
struct UploadTests {
    @Test("a 100 MB file PUT arrives intact")
    func large() throws {
        let nginx = try NginxServer()
        let rig = try TransferRig()
        let source = rig.directory + "/upload.bin"
        try makeRandomFile(source, size: 100_000_000)
        let digest = try sha256(source)
        let id = try rig.create(.upload(source, to: nginx.baseURL + "/upload/upload.bin"))
        let completion = try rig.completion(of: id, timeout: 120)
        #expect(completion.error == nil)
        #expect(completion.response?.status == 201)
        #expect(completion.progress.bytesSent == 100_000_000)
        #expect(completion.progress.bytesExpectedToSend == 100_000_000)
        #expect(try sha256(nginx.uploads + "/upload.bin") == digest)
    }

    @Test("an upload from a file that does not exist is a file error naming it")
    func missing() throws {
        let nginx = try NginxServer()
        let rig = try TransferRig()
        let id = try rig.create(.upload(rig.directory + "/nothing.bin", to: nginx.baseURL + "/upload/x"))
        let completion = try rig.completion(of: id)
        #expect(completion.error == .file("cannot read \(rig.directory)/nothing.bin: No such file or directory"))
        #expect(nginx.requests.isEmpty, "nothing was sent")
    }

    @Test("the agent runs as the app's user: a file that user cannot read is a file error, though voipd could read it",
          .enabled(if: getuid() == 0, "needs root"))
    func unreadable() throws {
        let nginx = try NginxServer()
        let rig = try TransferRig(credentials: SpawnCredentials(uid: 65534, gid: 65534, supplementaryGroups: []))
        let source = rig.directory + "/root-only.bin"
        try makeRandomFile(source, size: 1000)
        chmod(source, 0o600)
        let id = try rig.create(.upload(source, to: nginx.baseURL + "/upload/stolen.bin"))
        let completion = try rig.completion(of: id)
        #expect(completion.error == .file("cannot read \(source): Permission denied"))
        #expect(!fileExists(nginx.uploads + "/stolen.bin"))
        // And it can upload what that user may read, and download into what it owns.
        let readable = rig.directory + "/shared.bin"
        try makeRandomFile(readable, size: 1000)
        let up = try rig.create(.upload(readable, to: nginx.baseURL + "/upload/shared.bin"))
        #expect(try rig.completion(of: up).error == nil)
        let down = try rig.create(.download(nginx.baseURL + "/upload/shared.bin", to: rig.downloads + "/shared.bin"))
        #expect(try rig.completion(of: down).error == nil)
        var status = stat()
        #expect(stat(rig.downloads + "/shared.bin", &status) == 0 && status.st_uid == 65534, "the file is the app user's")
        #expect(status.st_mode & 0o777 == 0o600)
    }
}
