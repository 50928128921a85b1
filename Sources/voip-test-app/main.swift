import Foundation
import Glibc
import VoipClient
import VoipdSystem

// A small app for the integration tests, built on the client library. It reports every
// event and every byte it reads to the test over `--report PATH` and takes commands the same
// way: TestAppReport and TestAppCommand (Sources/TestAppMessages), one JSON object a line.
// Options:
//   --report PATH        the test's report socket (required)
//   --name NAME          the app's name (default: $VOIPD_APP_NAME)
//   --no-ack KIND        report events of this kind but never acknowledge them (repeatable)
//   --no-read            do not read VoIP sockets on its own; only on a "read" command
//   --exit-on-wake       exit (status 3) on voipSocketReadable: a crash loop for the tests
//   --answer-on-wake     on voipSocketReadable, make its audio session active (answer the
//                        call) at once, before reading or acknowledging, as a phone's wake
//                        handler does; reported as the audioSession command's answer is
//   --echo MICROSECONDS  write back what it reads from a VoIP socket after handling it for
//                        this long (as an app handles an INVITE): a stop can land between the
//                        read and the answer (and on a VoIP listener, between the accept and
//                        the registration of the connection). Neither reads nor events are
//                        reported (floods)
//   --socket PATH        voipd's control socket
//   --no-reconnect       exit when the connection to voipd closes, instead of reconnecting
//   --without-voipd      no connection to voipd: only the report channel and the sockets (the
//                        hibernation tests stop it themselves); voipd's commands answer an error

signal(SIGPIPE, SIG_IGN)
exit(TestApp(arguments: Array(CommandLine.arguments.dropFirst())).run())
