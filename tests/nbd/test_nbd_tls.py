#!/usr/bin/env python3
"""test_nbd_tls.py - atoll-nbd over TLS (NBD_OPT_STARTTLS), driven by the
clients users have: nbdinfo, nbdcopy and qemu-img with a PSK file and with
X.509 certificates made here with certtool, plus a raw socket for what a
client without TLS may see.

  test_nbd_tls.py BUILD/tests/nbd/atoll-nbd-fake

The server is the real atoll-nbd code over in-memory images (fake_image.c:
any name is an image of ATOLL_NBD_FAKE_SIZE bytes, the list is disk1 and
disk2), so no cluster is needed.  Each test is named for the one behaviour
it checks; everything lives in one temporary folder, removed at the end."""
import hashlib
import os
import shutil
import signal
import ssl
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nbdtest  # noqa: E402

MiB = 1 << 20
SIZE = 64 * MiB
TLS_REQD = 0x80000005
POLICY = 0x80000002

for tool in ("nbdinfo", "nbdcopy", "qemu-img", "certtool"):
    if not shutil.which(tool):
        print("%s is missing: scripts/deps.sh installs it" % tool)
        sys.exit(nbdtest.SKIP)


def sh(cmd, ok=True, timeout=60):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if ok and p.returncode != 0:
        raise AssertionError("%s failed (%d): %s%s" % (" ".join(cmd), p.returncode,
                                                       p.stdout, p.stderr))
    return p


class Ctx:
    pass


# ---- credentials -----------------------------------------------------------

def certtool(tmp, args, template=None):
    cmd = ["certtool"] + args
    if template:
        path = os.path.join(tmp, "template.info")
        with open(path, "w") as f:
            f.write(template)
        cmd += ["--template", path]
    sh(cmd)


def make_certificates(tmp):
    """A CA, a server certificate for 127.0.0.1 (nbdkit's file names) and a
    client certificate with CN=carol; returns (server dir, client dir)."""
    srv_dir = os.path.join(tmp, "pki-server")
    cli_dir = os.path.join(tmp, "pki-client")
    os.mkdir(srv_dir)
    os.mkdir(cli_dir)
    ca_key = os.path.join(tmp, "ca-key.pem")
    ca_cert = os.path.join(srv_dir, "ca-cert.pem")
    key = ["--generate-privkey", "--key-type=ecdsa", "--outfile"]
    certtool(tmp, key + [ca_key])
    certtool(tmp, ["--generate-self-signed", "--load-privkey", ca_key,
                   "--outfile", ca_cert],
             "cn = atoll test CA\nca\ncert_signing_key\nexpiration_days = 2\n")
    shutil.copy(ca_cert, os.path.join(cli_dir, "ca-cert.pem"))
    sign = ["--generate-certificate", "--load-ca-certificate", ca_cert,
            "--load-ca-privkey", ca_key]
    certtool(tmp, key + [os.path.join(srv_dir, "server-key.pem")])
    certtool(tmp, sign + ["--load-privkey", os.path.join(srv_dir, "server-key.pem"),
                          "--outfile", os.path.join(srv_dir, "server-cert.pem")],
             "cn = localhost\ndns_name = localhost\nip_address = 127.0.0.1\n"
             "tls_www_server\nsigning_key\nencryption_key\nexpiration_days = 2\n")
    certtool(tmp, key + [os.path.join(cli_dir, "client-key.pem")])
    certtool(tmp, sign + ["--load-privkey", os.path.join(cli_dir, "client-key.pem"),
                          "--outfile", os.path.join(cli_dir, "client-cert.pem")],
             "cn = carol\ntls_www_client\nsigning_key\nencryption_key\n"
             "expiration_days = 2\n")
    for d in (srv_dir, cli_dir):
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o600)
    return srv_dir, cli_dir


def start(c, args, log_name):
    srv = nbdtest.Server(c.binary, ["--log-level", "debug"] + args,
                         env={"ATOLL_NBD_FAKE_SIZE": str(SIZE)},
                         log=os.path.join(c.tmp, log_name))
    c.servers.append(srv)
    return srv.start()


def setup():
    c = Ctx()
    c.binary = sys.argv[1]
    c.tmp = tempfile.mkdtemp(prefix="atoll-nbd-tls.")
    c.servers = []
    try:
        c.psk = os.path.join(c.tmp, "keys.psk")
        c.keys = nbdtest.make_psk_file(c.psk, ["alice", "bob"])
        c.acl = os.path.join(c.tmp, "exports")
        with open(c.acl, "w") as f:
            f.write("# identity  images\nalice  disk1 vm-*\nbob    disk2\n"
                    "carol  disk1\n")
        c.srv_pki, c.cli_pki = make_certificates(c.tmp)
        # one server with PSK and certificates (client certificates checked)
        # and the export rules, TLS required
        c.srv = start(c, ["--tls=require", "--tls-psk", c.psk,
                          "--tls-certificates", c.srv_pki, "--tls-verify-peer",
                          "--tls-exports", c.acl], "require.log")
    except Exception:
        teardown(c)
        raise
    return c


def teardown(c):
    failed = False
    for s in c.servers:
        try:
            if s.stop() != 0:
                failed = True
                print(s.tail())
        except Exception as e:     # noqa: BLE001 - report, stop the others
            failed = True
            print("stopping atoll-nbd: %s" % e)
    shutil.rmtree(c.tmp, ignore_errors=True)
    if failed:
        raise SystemExit("an atoll-nbd did not stop cleanly on SIGTERM")


def psk_uri(c, user, name, psk=None):
    return "nbds://%s@127.0.0.1:%d/%s?tls-psk-file=%s" % (user, c.srv.port, name,
                                                           psk or c.psk)


def x509_uri(c, name, pki=None):
    return "nbds://127.0.0.1:%d/%s?tls-certificates=%s" % (c.srv.port, name,
                                                           pki or c.cli_pki)


def qemu_object_psk(c, user):
    # qemu reads DIR/keys.psk
    return "tls-creds-psk,id=tls0,endpoint=client,dir=%s,username=%s" % (c.tmp, user)


def qemu_image(c, name):
    return "driver=nbd,host=127.0.0.1,port=%d,export=%s,tls-creds=tls0" % (c.srv.port,
                                                                            name)


def random_file(c, name, size):
    path = os.path.join(c.tmp, name)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    return path


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---- PSK --------------------------------------------------------------------

def test_nbdinfo_with_psk_sees_the_export(c):
    out = sh(["nbdinfo", psk_uri(c, "alice", "disk1")]).stdout
    assert "with TLS" in out and "export-size: %d" % SIZE in out, out


def test_nbdcopy_with_psk_round_trips(c):
    src = random_file(c, "psk-src", 16 * MiB)
    back = os.path.join(c.tmp, "psk-back")
    sh(["nbdcopy", src, psk_uri(c, "alice", "vm-psk")])
    sh(["nbdcopy", psk_uri(c, "alice", "vm-psk"), back])
    with open(back, "rb") as f:
        assert hashlib.sha256(f.read(16 * MiB)).hexdigest() == sha(src)
    assert os.path.getsize(back) == SIZE


def test_qemu_img_with_psk_reads_and_converts(c):
    info = sh(["qemu-img", "info", "--object", qemu_object_psk(c, "alice"),
               "--image-opts", qemu_image(c, "vm-qemu")]).stdout
    assert "virtual size: 64 MiB" in info, info
    src = random_file(c, "qemu-src", 4 * MiB)
    sh(["nbdcopy", src, psk_uri(c, "alice", "vm-qemu")])
    out = os.path.join(c.tmp, "qemu-out.raw")
    sh(["qemu-img", "convert", "--object", qemu_object_psk(c, "alice"),
        "--image-opts", qemu_image(c, "vm-qemu"), "-O", "raw", out])
    with open(out, "rb") as f:
        assert hashlib.sha256(f.read(4 * MiB)).hexdigest() == sha(src)


def test_wrong_psk_key_is_refused(c):
    bad = os.path.join(c.tmp, "bad.psk")
    nbdtest.make_psk_file(bad, ["alice"])     # same user, another key
    p = sh(["nbdinfo", psk_uri(c, "alice", "disk1", psk=bad)], ok=False)
    assert p.returncode != 0 and "export-size" not in p.stdout, p.stdout


def test_unknown_psk_user_is_refused(c):
    bad = os.path.join(c.tmp, "mallory.psk")
    nbdtest.make_psk_file(bad, ["mallory"])
    p = sh(["nbdinfo", psk_uri(c, "mallory", "disk1", psk=bad)], ok=False)
    assert p.returncode != 0 and "export-size" not in p.stdout, p.stdout


def test_psk_file_changes_apply_without_restart(c):
    live = os.path.join(c.tmp, "live.psk")
    nbdtest.make_psk_file(live, ["alice"])
    srv = start(c, ["--tls=require", "--tls-psk", live], "live.log")
    uri = "nbds://%%s@127.0.0.1:%d/disk1?tls-psk-file=%s" % (srv.port, live)
    assert sh(["nbdinfo", uri % "dave"], ok=False).returncode != 0
    nbdtest.make_psk_file(live, ["dave"])       # alice out, dave in
    assert "with TLS" in sh(["nbdinfo", uri % "dave"]).stdout
    assert sh(["nbdinfo", uri % "alice"], ok=False).returncode != 0


# ---- X.509 ------------------------------------------------------------------

def test_nbdinfo_with_certificates_sees_the_export(c):
    out = sh(["nbdinfo", x509_uri(c, "disk1")]).stdout
    assert "with TLS" in out and "export-size: %d" % SIZE in out, out


def test_nbdcopy_with_certificates_round_trips(c):
    # carol (the certificate's CN) may use disk1 only
    src = random_file(c, "x509-src", 8 * MiB)
    back = os.path.join(c.tmp, "x509-back")
    sh(["nbdcopy", src, x509_uri(c, "disk1")])
    sh(["nbdcopy", x509_uri(c, "disk1"), back])
    with open(back, "rb") as f:
        assert hashlib.sha256(f.read(8 * MiB)).hexdigest() == sha(src)


def test_qemu_img_with_certificates_reads(c):
    obj = "tls-creds-x509,id=tls0,endpoint=client,dir=%s" % c.cli_pki
    info = sh(["qemu-img", "info", "--object", obj, "--image-opts",
               qemu_image(c, "disk1")]).stdout
    assert "virtual size: 64 MiB" in info, info


def test_client_without_certificate_is_refused_under_verify_peer(c):
    nocert = os.path.join(c.tmp, "pki-nocert")
    os.mkdir(nocert)
    shutil.copy(os.path.join(c.cli_pki, "ca-cert.pem"), nocert)
    p = sh(["nbdinfo", x509_uri(c, "disk1", pki=nocert)], ok=False)
    assert p.returncode != 0 and "export-size" not in p.stdout, p.stdout


def tls_raw(c, port):
    """A raw connection that negotiated structured replies in plain text,
    then STARTTLS; returns it wrapped in TLS (python's ssl, certificates)."""
    r = nbdtest.Raw("127.0.0.1", port)
    r.greet()
    r.option(8)                  # structured replies, before TLS
    assert r.reply()[1] == 1
    r.option(5)
    assert r.reply()[1] == 1     # ACK: the handshake starts
    ctx = ssl.create_default_context(cafile=os.path.join(c.cli_pki, "ca-cert.pem"))
    r.s = ctx.wrap_socket(r.s, server_hostname="127.0.0.1")
    return r


def test_options_before_starttls_are_forgotten(c):
    # nbdkit's CVE-2021-3716: structured replies chosen in plain text (by
    # a man in the middle, say) must not carry over into TLS
    srv = start(c, ["--tls=on", "--tls-certificates", c.srv_pki], "forget.log")
    r = tls_raw(c, srv.port)
    r.option(5)                  # STARTTLS again, inside TLS: invalid
    assert r.reply()[1] == 0x80000003
    r.go("forget1")
    r.request(0, offset=0, length=512, cookie=7)      # READ
    err, cookie, data = r.simple_reply(512)           # simple: forgotten
    assert err == 0 and cookie == 7 and data == bytes(512)
    r.request(2)                 # DISC
    r.s.close()


# ---- TLS required -------------------------------------------------------------

def test_plain_nbdinfo_is_refused_with_an_error(c):
    p = sh(["nbdinfo", "nbd://127.0.0.1:%d/disk1" % c.srv.port], ok=False)
    assert p.returncode != 0, p.stdout
    assert "export-size" not in p.stdout and p.stderr.strip(), (p.stdout, p.stderr)


def test_plain_list_leaks_no_export(c):
    p = sh(["nbdinfo", "--list", "nbd://127.0.0.1:%d/" % c.srv.port], ok=False)
    assert p.returncode != 0
    assert "disk1" not in p.stdout + p.stderr and "disk2" not in p.stdout + p.stderr


def test_raw_options_before_tls_get_tls_reqd(c):
    r = nbdtest.Raw("127.0.0.1", c.srv.port)
    r.greet()
    for opt, data in ((3, b""), (8, b""), (6, b"\0\0\0\x05disk1\0\0"),
                      (7, b"\0\0\0\x05disk1\0\0"), (9, b"\0\0\0\x05disk1\0\0\0\0")):
        r.option(opt, data)
        ropt, rtype, payload = r.reply()
        assert ropt == opt and rtype == TLS_REQD, (opt, hex(rtype))
        assert b"disk" not in payload, payload
    r.option(1, b"disk1")          # EXPORT_NAME has no error reply: closed
    assert r.closed()


def test_starttls_with_data_gets_invalid(c):
    r = nbdtest.Raw("127.0.0.1", c.srv.port)
    r.greet()
    r.option(5, b"x")
    assert r.reply()[1] == 0x80000003
    r.option(2)                   # ABORT is answered, then closed
    assert r.reply()[1] == 1
    assert r.closed()


def test_garbage_instead_of_a_tls_handshake_closes_only_that_connection(c):
    r = nbdtest.Raw("127.0.0.1", c.srv.port)
    r.greet()
    r.option(5)
    assert r.reply()[1] == 1      # ACK: the handshake starts
    r.s.sendall(b"\x16\x03\x01\xff\xff" + b"not a client hello" * 10)
    assert r.closed()
    out = sh(["nbdinfo", psk_uri(c, "alice", "disk1")]).stdout
    assert "with TLS" in out


# ---- exports per identity -------------------------------------------------------

def test_identity_cannot_open_an_image_not_allowed_to_it(c):
    p = sh(["nbdinfo", psk_uri(c, "bob", "disk1")], ok=False)
    assert p.returncode != 0 and "export-size" not in p.stdout, p.stdout
    assert "not among the exports allowed" in p.stderr or p.returncode != 0
    p = sh(["nbdcopy", psk_uri(c, "bob", "vm-1"), os.path.join(c.tmp, "stolen")],
           ok=False)
    assert p.returncode != 0


def test_identity_list_shows_only_its_images(c):
    out = sh(["nbdinfo", "--list", psk_uri(c, "bob", "")]).stdout
    assert 'export="disk2"' in out and "disk1" not in out, out
    out = sh(["nbdinfo", "--list", psk_uri(c, "alice", "")]).stdout
    assert 'export="disk1"' in out and "disk2" not in out, out


def test_pattern_allows_matching_images_and_their_snapshots(c):
    sh(["nbdinfo", psk_uri(c, "alice", "vm-anything")])
    out = sh(["nbdinfo", psk_uri(c, "alice", "vm-anything@snap1")]).stdout
    assert "is_read_only: true" in out, out


def test_sighup_reads_the_export_rules_again(c):
    rules = os.path.join(c.tmp, "hup-exports")
    with open(rules, "w") as f:
        f.write("alice disk1\n")
    srv = start(c, ["--tls=require", "--tls-psk", c.psk, "--tls-exports", rules],
                "hup.log")
    uri = "nbds://alice@127.0.0.1:%d/%%s?tls-psk-file=%s" % (srv.port, c.psk)
    assert sh(["nbdinfo", uri % "disk2"], ok=False).returncode != 0
    with open(rules, "w") as f:
        f.write("alice disk2\n")
    srv.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while "read again" not in open(srv.log).read() and time.time() < deadline:
        time.sleep(0.05)
    assert "with TLS" in sh(["nbdinfo", uri % "disk2"]).stdout
    assert sh(["nbdinfo", uri % "disk1"], ok=False).returncode != 0
    with open(rules, "w") as f:
        f.write("alice\n")          # malformed: the rules in force stay
    srv.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while "previous rules stay" not in open(srv.log).read() and time.time() < deadline:
        time.sleep(0.05)
    assert "with TLS" in sh(["nbdinfo", uri % "disk2"]).stdout
    assert srv.alive()


# ---- start-up checks --------------------------------------------------------------

def refused_start(c, args):
    p = subprocess.run([c.binary, "--addr", "127.0.0.1:%d" % nbdtest.free_port()] + args,
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, ATOLL_NBD_FAKE_SIZE=str(SIZE)))
    assert p.returncode != 0, p.stderr
    return p.stderr


def test_wildcard_address_without_tls_is_refused(c):
    for args in ([], ["--tls=on", "--tls-psk", c.psk]):
        p = subprocess.run([c.binary, "--addr", "0.0.0.0:%d" % nbdtest.free_port()] + args,
                           capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and "--allow-insecure" in p.stderr, p.stderr


def test_world_readable_psk_file_is_refused(c):
    loose = os.path.join(c.tmp, "loose.psk")
    nbdtest.make_psk_file(loose, ["alice"])
    os.chmod(loose, 0o644)
    err = refused_start(c, ["--tls=require", "--tls-psk", loose])
    assert "chmod 600" in err, err


def test_malformed_psk_file_is_refused_with_its_line(c):
    bad = os.path.join(c.tmp, "malformed.psk")
    fd = os.open(bad, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"alice:00ff\nbob-without-key\n")
    os.close(fd)
    err = refused_start(c, ["--tls=require", "--tls-psk", bad])
    assert "line 2" in err, err


def test_tls_settings_with_tls_off_are_refused(c):
    err = refused_start(c, ["--tls-psk", c.psk])
    assert "--tls=require" in err, err


def test_require_without_credentials_is_refused(c):
    err = refused_start(c, ["--tls=require"])
    assert "--tls-psk" in err, err


def test_malformed_exports_file_is_refused_with_its_line(c):
    bad = os.path.join(c.tmp, "bad-exports")
    with open(bad, "w") as f:
        f.write("alice disk1\n\nbob\n")
    err = refused_start(c, ["--tls=require", "--tls-psk", c.psk, "--tls-exports", bad])
    assert "line 3" in err, err


def test_tls_on_serves_plain_and_tls_clients(c):
    srv = start(c, ["--tls=on", "--tls-psk", c.psk], "on.log")
    out = sh(["nbdinfo", "nbd://127.0.0.1:%d/disk1" % srv.port]).stdout
    assert "without TLS" in out, out
    out = sh(["nbdinfo", "nbds://alice@127.0.0.1:%d/disk1?tls-psk-file=%s"
              % (srv.port, c.psk)]).stdout
    assert "with TLS" in out, out


def test_atoll_conf_nbd_section_sets_tls(c):
    conf = os.path.join(c.tmp, "atoll.conf")
    with open(conf, "w") as f:
        f.write("[nbd]\nnbd_tls = require\nnbd_tls_psk = %s\nnbd_tls_exports = %s\n"
                % (c.psk, c.acl))
    srv = start(c, ["--conf", conf], "conf.log")
    p = sh(["nbdinfo", srv.uri("disk1")], ok=False)
    assert p.returncode != 0 and "export-size" not in p.stdout
    uri = "nbds://bob@127.0.0.1:%d/%%s?tls-psk-file=%s" % (srv.port, c.psk)
    assert "with TLS" in sh(["nbdinfo", uri % "disk2"]).stdout
    assert sh(["nbdinfo", uri % "disk1"], ok=False).returncode != 0
    # the command line wins over the file: --tls=on answers a plain LIST,
    # which the file's rules leave empty (no '*' line)
    srv2 = start(c, ["--conf", conf, "--tls=on"], "conf-on.log")
    r = nbdtest.Raw("127.0.0.1", srv2.port)
    r.greet()
    r.option(3)
    assert r.reply()[1] == 1     # ACK at once: nothing listed, no TLS_REQD


def test_tls_off_refuses_starttls_and_plain_works(c):
    srv = start(c, [], "off.log")
    p = sh(["nbdinfo", "nbds://alice@127.0.0.1:%d/disk1?tls-psk-file=%s"
            % (srv.port, c.psk)], ok=False)
    assert p.returncode != 0
    r = nbdtest.Raw("127.0.0.1", srv.port)
    r.greet()
    r.option(5)
    _, rtype, msg = r.reply()
    assert rtype == POLICY and b"--tls=" in msg, (hex(rtype), msg)
    assert "without TLS" in sh(["nbdinfo", srv.uri("disk1")]).stdout


TESTS = [v for k, v in list(globals().items()) if k.startswith("test_")]

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    nbdtest.run(TESTS, setup, teardown)
