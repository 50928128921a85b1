// The daemon's public API takes and gives the configuration's types (`Daemon(configuration:)`,
// `Daemon.checkManifests`), so whoever imports the daemon sees them, as NIOPosix re-exports
// NIOCore.
@_exported import VoipdConfiguration
