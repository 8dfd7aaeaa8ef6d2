#!/usr/bin/env python3
"""check-attest.py - the attestation path end to end, as TAP.

usage: check-attest.py RESULTS_DIR
       check-attest.py --demo      (the end of 'make': one report, told in plain words)

  1. Boots the guest with the sev-snp-responder (docs/snp-responder.md) and a nonce the
     host drew on the kernel command line; runs tsm_report and, last, sev_vmpck_wipe
     (RESULTS_DIR/attest.tap).
  2. Takes the report and certificate table that tsm_report printed and checks them with
     the openssl command-line tool (scripts/snp-verify.py): the chain to the ARK this
     build made, the signature, REPORT_DATA = the nonce (RESULTS_DIR/attest-host.tap).
  3. The same verifier on the real AMD Milan report of ../shared/testdata/snp-milan/:
     accepted as it is, refused with one byte changed, refused with a certificate that
     did not sign it; skipped, with the reason, where that folder is absent.
  4. Steps 1 and 2 again with sev_guest.vmpck_id=2, where privlevel_floor is 2 and the cases
     below the floor run (RESULTS_DIR/attest-vmpl2.tap).
"""

import importlib.util
import os
import re
import secrets
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import vmharness as vm  # noqa: E402

_spec = importlib.util.spec_from_file_location("snp_verify", os.path.join(HERE, "snp-verify.py"))
verify_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_mod)

CERTS = os.path.join(vm.BUILD, "snp")
GUEST_TESTS = "tsm_report,sev_vmpck_wipe"
TESTDATA_CANDIDATES = [
    os.environ.get("SNP_TESTDATA", ""),
    os.path.join(TOP, "..", "shared", "testdata", "snp-milan"),
    "/work/shared/testdata/snp-milan",  # the workplace's shared folder, for clones elsewhere
]


class Tap:
    def __init__(self, path):
        self.path, self.lines = path, []

    def add(self, ok, name, skip=None):
        d = f" # SKIP {skip}" if skip else ""
        line = f"{'ok' if ok or skip else 'not ok'} {len(self.lines) + 1} - {name}{d}"
        self.lines.append(line)
        print(line, flush=True)

    def write(self):
        with open(self.path, "w") as f:
            f.write(f"TAP version 13\n1..{len(self.lines)}\n" + "\n".join(self.lines) + "\n")
        return sum(1 for l in self.lines if l.startswith("not ok"))


def guest_run(name, append, tap_path, quiet=False):
    """Run the attestation guest tests in one boot; the exit status."""
    cmd = [os.path.join(HERE, "guest-test.py"), "--name", name, "--tap", tap_path,
           "--snp", "--append", append, GUEST_TESTS]
    out = subprocess.DEVNULL if quiet else None
    return subprocess.run(cmd, stdout=out, stderr=out).returncode


def printed_blob(console, tag):
    """The bytes a guest printed as '# TAG NNNN: HEX' lines, or None if incomplete."""
    m = re.search(rf"# {tag}-len: (\d+)", console)
    if not m:
        return None
    size = int(m.group(1))
    chunks = {}
    for off, hexd in re.findall(rf"# {tag} ([0-9a-f]{{4}}): ([0-9a-f]+)", console):
        chunks[int(off, 16)] = bytes.fromhex(hexd)
    data = b"".join(chunks[k] for k in sorted(chunks))
    return data if len(data) == size else None


def built_cert(name):
    """A certificate of the fake chain this build made (build/snp/NAME)."""
    with open(os.path.join(CERTS, name), "rb") as f:
        return f.read()


def host_checks(tap, console, nonce, vmpl, run):
    report = printed_blob(console, "snp-outblob")
    aux = printed_blob(console, "snp-auxblob")
    tap.add(report is not None and aux is not None,
            f"{run}: guest printed outblob and auxblob of the host's nonce")
    if report is None or aux is None:
        return
    try:
        table = verify_mod.cert_table(aux)
    except ValueError as e:
        tap.add(False, f"{run}: auxblob is a certificate table ({e})")
        return
    have = {g: table.get(g) for g in (verify_mod.GUID_VCEK, verify_mod.GUID_ASK,
                                      verify_mod.GUID_ARK)}
    tap.add(all(have.values()), f"{run}: auxblob holds VCEK, ASK and ARK")
    ark = built_cert("ark.der")
    tap.add(have[verify_mod.GUID_ARK] == ark, f"{run}: auxblob's ARK is the ARK this build made")
    tap.add(have[verify_mod.GUID_VCEK] == built_cert("vcek.der"),
            f"{run}: auxblob's VCEK is the responder's")
    if not all(have.values()):
        return
    for ok, text in verify_mod.verify(report, have[verify_mod.GUID_VCEK],
                                      have[verify_mod.GUID_ASK], ark, nonce=nonce, vmpl=vmpl):
        tap.add(ok, f"{run}: {text}")
    # The same key certified for another chip: chain and signature hold, the chip does not.
    results = verify_mod.verify(report, built_cert("vcek-otherchip.der"),
                                have[verify_mod.GUID_ASK], ark)
    refused = [t for ok, t in results if not ok]
    tap.add(len(refused) == 1 and "hwID" in refused[0],
            f"{run}: refused with the same key certified for another chip"
            + (f" (refusals: {refused})" if len(refused) != 1 else ""))


def testdata_dir():
    for d in TESTDATA_CANDIDATES:
        if d and all(os.path.exists(os.path.join(d, f))
                     for f in ("report.bin", "vcek.der", "ask_ark.pem")):
            return os.path.realpath(d)
    return None


def real_testdata(d):
    """(report, VCEK, ASK, ARK) of the real AMD Milan test data in d."""
    with open(os.path.join(d, "report.bin"), "rb") as f:
        report = f.read()
    with open(os.path.join(d, "vcek.der"), "rb") as f:
        vcek = f.read()
    with open(os.path.join(d, "ask_ark.pem"), "rb") as f:
        ask, ark = verify_mod.split_pem(f.read())
    return report, vcek, ask, ark


def real_report_checks(tap):
    d = testdata_dir()
    names = ["real AMD Milan report: accepted",
             "real AMD Milan report: refused with one byte of REPORT_DATA changed",
             "real AMD Milan report: refused with one byte of the signature changed",
             "real AMD Milan report: refused with the fake VCEK in place of AMD's",
             "real AMD Milan report: refused with the fake ARK as trust anchor"]
    if d is None:
        for n in names:
            tap.add(False, n, skip="../shared/testdata/snp-milan is absent (set SNP_TESTDATA)")
        return
    report, vcek, ask, ark = real_testdata(d)
    fake_vcek, fake_ark = built_cert("vcek.der"), built_cert("ark.der")

    def all_ok(rep, v=vcek, a=ark):
        results = verify_mod.verify(rep, v, ask, a)
        for ok, text in results:
            if not ok:
                print(f"#   refused: {text}")
        return all(ok for ok, _ in results)

    data_changed = bytearray(report)
    data_changed[0x50] ^= 0x01
    sig_changed = bytearray(report)
    sig_changed[0x2A0] ^= 0x80
    tap.add(all_ok(report), names[0])
    tap.add(not all_ok(bytes(data_changed)), names[1])
    tap.add(not all_ok(bytes(sig_changed)), names[2])
    tap.add(not all_ok(report, v=fake_vcek), names[3])
    tap.add(not all_ok(report, a=fake_ark), names[4])


def demo():
    say = lambda text="": print(text, flush=True)  # noqa: E731
    say()
    say("Attestation without AMD hardware")
    say("================================")
    nonce = secrets.token_bytes(64)
    say("We boot the guest again, now with QEMU's sev-snp-responder: a fake AMD Secure")
    say("Processor. A program in the guest asks for an attestation report through")
    say("/sys/kernel/config/tsm/report, carrying a nonce we drew here on the host,")
    say(f"{nonce.hex()[:32]}...")
    rc = guest_run("demo-attest", f"snp_nonce={nonce.hex()}",
                   os.path.join(vm.RUNDIR, "demo-attest.tap"), quiet=True)
    console = open(os.path.join(vm.RUNDIR, "demo-attest", "console.log"),
                   errors="replace").read()
    report = printed_blob(console, "snp-outblob")
    aux = printed_blob(console, "snp-auxblob")
    if rc or report is None or aux is None:
        say(f"The guest did not get its report (guest tests: exit status {rc}; "
            f"console: {os.path.join(vm.RUNDIR, 'demo-attest', 'console.log')}).")
        return 1
    table = verify_mod.cert_table(aux)
    f = verify_mod.report_fields(report)
    say("The guest kernel's sev-guest driver encrypted the request with its VMPCK; the")
    say(f"device checked it as the PSP would and answered with a {len(report)}-byte report")
    say(f"(version {f['version']}, VMPL {f['vmpl']}) signed with ECDSA P-384 by the fake "
        f"VCEK, and a certificate")
    say(f"table with {len(table)} certificates (VCEK, ASK, ARK).")
    say("Checked here on the host with the openssl command line, as one checks a real one:")
    results = verify_mod.verify(report, table.get(verify_mod.GUID_VCEK),
                                table.get(verify_mod.GUID_ASK), built_cert("ark.der"),
                                nonce=nonce, vmpl=0)
    for ok, text in results:
        say(f"  {'ok ' if ok else 'NOT'}  {text}")
    d = testdata_dir()
    if d:
        real_ok = all(ok for ok, _ in verify_mod.verify(*real_testdata(d)))
        say(f"The same checks on a real AMD Milan report ({d}): "
            + ("all pass." if real_ok else "FAIL."))
    ok = all(ok for ok, _ in results)
    say()
    say("Demo: " + ("as promised." if ok else "NOT as promised: see the lines above."))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--demo"]:
        return demo()
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    results = sys.argv[1]
    os.makedirs(results, exist_ok=True)
    bad = 0

    host = Tap(os.path.join(results, "attest-host.tap"))
    rc = 0
    for run, vmpck in (("vmpck_id 0", 0), ("vmpck_id 2", 2)):
        nonce = secrets.token_bytes(64)
        name = "check-attest" + ("" if vmpck == 0 else f"-vmpl{vmpck}")
        rc |= guest_run(name, f"snp_nonce={nonce.hex()} sev_guest.vmpck_id={vmpck}",
                        os.path.join(results, name.replace("check-", "") + ".tap"))
        console = open(os.path.join(vm.RUNDIR, name, "console.log"), errors="replace").read()
        host_checks(host, console, nonce, vmpck, run)
    real_report_checks(host)
    bad += host.write()
    return 1 if bad or rc else 0


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    sys.exit(main())
