import Foundation
import FoundationNetworking
import VoipdTransfers

/// URLSession's errors as the engine needs them: which are worth retrying. A background
/// session waits out a lost connection, a host it cannot reach, a DNS failure or a timeout;
/// it gives up on what retrying cannot fix.
enum NetworkErrors {
    static let permanent: Set<URLError.Code> = [
        .badURL, .unsupportedURL, .httpTooManyRedirects, .redirectToNonExistentLocation, .userAuthenticationRequired,
        .cannotDecodeRawData, .cannotDecodeContentData, .fileDoesNotExist, .fileIsDirectory, .noPermissionsToReadFile,
        .dataLengthExceedsMaximum, .serverCertificateHasBadDate, .serverCertificateUntrusted, .serverCertificateHasUnknownRoot,
        .serverCertificateNotYetValid, .clientCertificateRejected, .clientCertificateRequired, .appTransportSecurityRequiresSecureConnection,
    ]

    static func failure(_ error: any Error) -> NetworkFailure {
        if let urlError = error as? URLError {
            return NetworkFailure(code: urlError.code.rawValue, message: urlError.localizedDescription,
                                  isTransient: !permanent.contains(urlError.code))
        }
        let nsError = error as NSError
        return NetworkFailure(code: nsError.code, message: nsError.localizedDescription, isTransient: true)
    }
}
