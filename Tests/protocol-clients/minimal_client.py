#!/usr/bin/env python3
# The minimal voipd client from docs/PROTOCOL.md ("A complete session"): keep both copies
# identical. Usage: minimal_client.py HOST PORT. It says hello, registers a TCP connection to
# HOST:PORT as the VoIP socket "sip" (or takes back the one voipd held for an earlier run),
# then handles events until willTerminate.
import array, json, os, select, socket, struct, sys

HELLO, REGISTER, UNREGISTER, ACK, REPLY, EVENT = 1, 2, 3, 5, 128, 129
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
ctl.connect(os.environ.get("VOIPD_SOCKET") or ("/run/voipd/voipd.sock" if os.geteuid() == 0
            else os.environ["XDG_RUNTIME_DIR"] + "/voipd.sock"))
events, next_id = [], 1  # events that arrived while we waited for a reply

def send(mtype, body, fds=()):
    data = json.dumps(body).encode()
    rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())] if fds else []
    ctl.sendmsg([struct.pack("<IHBB", len(data), mtype, len(fds), 1) + data], rights)

def receive():  # one frame: (type, body, descriptors)
    data, ancillary, _, _ = ctl.recvmsg(65536, socket.CMSG_SPACE(253 * 4), socket.MSG_CMSG_CLOEXEC)
    if not data:
        sys.exit("voipd closed the connection")
    fds = array.array("i")
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
    length, mtype = struct.unpack_from("<IH", data)
    return mtype, json.loads(data[8:8 + length]), list(fds)

def call(mtype, body, fds=()):  # a request; returns (result, descriptors) of its reply
    global next_id
    body["id"], next_id = next_id, next_id + 1
    send(mtype, body, fds)
    while True:
        rtype, message, received = receive()
        if rtype == REPLY and message["id"] == body["id"]:
            if not message["ok"]:
                sys.exit("voipd refused: %(code)s: %(message)s" % message["error"])
            return message["result"], received
        if rtype == EVENT:
            events.append(message)

def read_voip():  # never blocks: the data may already have been read
    global voip
    try:
        data = voip.recv(65536, socket.MSG_DONTWAIT)
    except BlockingIOError:
        return
    print("peer:", data.decode(errors="replace").rstrip() if data else "(hung up)", flush=True)
    if not data:  # stop holding a dead connection
        call(UNREGISTER, {"name": "sip"})
        voip.close()
        voip = None

name = os.environ.get("VOIPD_APP_NAME", "minimal")
result, fds = call(HELLO, {"name": name})
held = dict(zip(result["sockets"], fds))  # sockets voipd held for an earlier run
if "sip" in held:
    voip = socket.socket(fileno=held.pop("sip"))
else:
    voip = socket.create_connection((sys.argv[1], int(sys.argv[2])))
    call(REGISTER, {"name": "sip"}, [voip.fileno()])
for fd in held.values():
    os.close(fd)
print(f"{name}: {result['app']['state']}, VoIP socket registered", flush=True)

while True:
    if not events:
        readable, _, _ = select.select([s for s in (ctl, voip) if s], [], [])
        if voip in readable:
            read_voip()  # running: the app reads its own socket
        if ctl in readable:
            mtype, message, fds = receive()
            for fd in fds:
                os.close(fd)
            if mtype == EVENT:
                events.append(message)
        continue
    event = events.pop(0)
    print("event:", event["kind"], "->", event["state"], event.get("socket", ""), flush=True)
    if event["kind"] == "voipSocketReadable" and voip:
        read_voip()  # work first: the acknowledgement lets voipd suspend us again
    send(ACK, {"event": event["event"]})
    if event["kind"] == "willTerminate":
        break
