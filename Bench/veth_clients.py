"""A stand-in for clients on another machine: a network namespace joined to this one by a veth
pair, for Bench/09-events.sh's subscribers (events_bench.py EVENTS_NETNS, EVENTS_ADDRESS).

Over loopback, the kernel runs the receiving socket's TCP input inside the sender's write
(softirq): nginx's time paid for the subscribers' receive half, ~20% of its CPU per event
written, which a client elsewhere receives on its own machine. Here the client end of the
pair polls its packets in a kernel thread of its own (threaded NAPI: GRO on that end, TSO off
the server's, so veth hands TCP packets to NAPI rather than to the sender's softirq). That
thread's CPU is the clients' kernel, not the server's; the server's side keeps the send half
(TCP, IP, the device's transmit). The ACKs the clients send back are received in that
thread too, where a real NIC would take them in the server's softirq: a small part, counted
on neither side here.

    veth_clients.py up <name> <server address> <client address>   (a /30: x.x.x.1, x.x.x.2)
    veth_clients.py down <name>
Needs root (ip netns)."""
import ctypes
import fcntl
import socket
import struct
import subprocess
import sys

SIOCETHTOOL, ETHTOOL_STSO, ETHTOOL_SGRO = 0x8946, 0x1F, 0x2C


def ethtool_set(device, command, value):
    """One ethtool "set" on a device of the calling process's namespace (no ethtool binary
    needed): SIOCETHTOOL with a struct ethtool_value."""
    value_buffer = ctypes.create_string_buffer(struct.pack("II", command, value))
    request = struct.pack("16sP", device.encode(), ctypes.addressof(value_buffer)) + bytes(16)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, request)


def run(*args):
    subprocess.run(args, check=True)


def up(name, server, client):
    # veth names are at most 15 characters.
    server_end, client_end = f"{name[:11]}-s", f"{name[:11]}-c"
    run("ip", "netns", "add", name)
    run("ip", "link", "add", server_end, "type", "veth", "peer", "name", client_end)
    run("ip", "link", "set", client_end, "netns", name)
    run("ip", "addr", "add", f"{server}/30", "dev", server_end)
    run("ip", "link", "set", server_end, "up")
    ethtool_set(server_end, ETHTOOL_STSO, 0)
    run("ip", "netns", "exec", name, "ip", "addr", "add", f"{client}/30", "dev", client_end)
    run("ip", "netns", "exec", name, "ip", "link", "set", client_end, "up")
    run("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
    run("ip", "netns", "exec", name, sys.executable, __file__, "napi", client_end)


def napi(device):
    """(In the namespace) GRO on, then the device's NAPI polled by a thread of its own."""
    ethtool_set(device, ETHTOOL_SGRO, 1)
    with open(f"/sys/class/net/{device}/threaded", "w") as f:
        f.write("1")


def down(name):
    subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)  # the pair goes with it


if __name__ == "__main__":
    {"up": up, "down": down, "napi": napi}[sys.argv[1]](*sys.argv[2:])
