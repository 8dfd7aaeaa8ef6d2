#!/usr/bin/env python3
"""snp-verify.py - verify an SEV-SNP attestation report with the openssl command line.

usage: snp-verify.py REPORT [--auxblob F] [--vcek F] [--chain F] [--ark F]
                            [--nonce HEX] [--vmpl N]

Checks, each printed on its own line, and exits 0 only when all hold:
  - the report is an ATTESTATION_REPORT (0x4A0 bytes, version 2 or 3, signature
    algorithm 1 = ECDSA P-384 with SHA-384);
  - the certificate chain ARK -> ASK -> VCEK verifies (openssl verify, the ARK's own
    signature included), with the ARK given by the verifier (--ark), never one taken
    from the report's certificate table alone;
  - the signature (r and s little-endian at 0x2A0 and 0x2E8) over bytes [0, 0x2A0)
    verifies with the VCEK's public key (openssl dgst -sha384 -verify);
  - the VCEK is this chip's and this TCB's: its AMD extensions hwID (1.3.6.1.4.1.3704.1.4)
    and the bootloader, TEE, SNP and microcode SPLs (…3704.1.3.1, .2, .3, .8) equal
    CHIP_ID and REPORTED_TCB of the report, as AMD's verifiers check;
  - REPORT_DATA equals --nonce, VMPL equals --vmpl, when given.

The certificates come from --vcek/--chain (DER or PEM; --chain holds ASK then ARK, as
AMD's ask_ark.pem does) or from --auxblob, the certificate table of configfs-tsm's
auxblob / SNP_GET_EXT_REPORT (GUID, offset, length entries, docs/snp-responder.md).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import uuid

REPORT_SIZE = 0x4A0
SIGNED_SIZE = 0x2A0
R_OFF, S_OFF, RS_LEN = 0x2A0, 0x2E8, 72
GUID_VCEK = uuid.UUID("63da758d-e664-4564-adc5-f4b93be8accd")
GUID_ASK = uuid.UUID("4ab7b379-bbac-4fe4-a02f-05aef327c782")
GUID_ARK = uuid.UUID("c0b406a4-a803-4952-9743-3fb6014cd0ae")


# AMD's VCEK extensions: hwID, and the TCB security patch levels with the byte of
# TCB_VERSION each one is.
OID_HWID = "1.3.6.1.4.1.3704.1.4"
OID_SPL = {"1.3.6.1.4.1.3704.1.3.1": ("bootloader", 0), "1.3.6.1.4.1.3704.1.3.2": ("tee", 1),
           "1.3.6.1.4.1.3704.1.3.3": ("snp", 6), "1.3.6.1.4.1.3704.1.3.8": ("microcode", 7)}


def u32(b, off):
    return int.from_bytes(b[off:off + 4], "little")


def report_fields(report):
    """The fields a verifier looks at, from the SNP ABI layout."""
    return {
        "version": u32(report, 0x00),
        "guest_svn": u32(report, 0x04),
        "policy": int.from_bytes(report[0x08:0x10], "little"),
        "vmpl": u32(report, 0x30),
        "signature_algo": u32(report, 0x34),
        "report_data": report[0x50:0x90],
        "measurement": report[0x90:0xC0],
        "report_id": report[0x140:0x160],
        "chip_id": report[0x1A0:0x1E0],
        "reported_tcb": report[0x180:0x188],
    }


def vcek_extensions(pem_path):
    """{OID: value bytes} of the certificate's extensions (openssl asn1parse)."""
    p = subprocess.run(["openssl", "asn1parse", "-in", pem_path], capture_output=True,
                       text=True)
    exts, oid = {}, None
    for line in p.stdout.splitlines():
        if "prim: OBJECT" in line:
            oid = line.rsplit(":", 1)[1].strip()
        elif oid and "prim: OCTET STRING" in line and "[HEX DUMP]:" in line:
            exts[oid] = bytes.fromhex(line.split("[HEX DUMP]:", 1)[1].strip())
            oid = None
        else:
            oid = None
    return exts


def der_int_value(b):
    """The value of a DER INTEGER (tag 2, short length), or None."""
    if len(b) < 3 or b[0] != 2 or b[1] != len(b) - 2:
        return None
    return int.from_bytes(b[2:], "big")


def tcb_checks(f, vcek_pem):
    """The VCEK's hwID and SPL extensions against the report."""
    exts = vcek_extensions(vcek_pem)
    checks = []
    hwid = exts.get(OID_HWID)
    checks.append((hwid is not None and hwid == f["chip_id"],
                   "VCEK hwID extension equals CHIP_ID" + (
                       "" if hwid == f["chip_id"] else
                       " (absent)" if hwid is None else f" (VCEK is for {hwid.hex()[:16]}..)")))
    bad = []
    for oid, (name, byte) in OID_SPL.items():
        v = der_int_value(exts.get(oid, b""))
        if v != f["reported_tcb"][byte]:
            bad.append(f"{name} {v} != {f['reported_tcb'][byte]}")
    checks.append((not bad, "VCEK TCB extensions equal REPORTED_TCB"
                   + (f" ({', '.join(bad)})" if bad else "")))
    return checks


def cert_table(blob):
    """{GUID: DER} from a GHCB certificate table; raises ValueError when malformed."""
    certs = {}
    off = 0
    while True:
        if off + 24 > len(blob):
            raise ValueError("certificate table has no terminating entry")
        guid = uuid.UUID(bytes=bytes(blob[off:off + 16]))
        c_off, c_len = u32(blob, off + 16), u32(blob, off + 20)
        if guid.int == 0 and c_off == 0 and c_len == 0:
            return certs
        if c_off + c_len > len(blob) or c_len == 0:
            raise ValueError(f"certificate {guid} at {c_off}+{c_len} outside the table "
                             f"({len(blob)} bytes)")
        certs[guid] = bytes(blob[c_off:c_off + c_len])
        off += 24


def der_length(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def der_integer(v):
    b = v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")
    if b[0] & 0x80:
        b = b"\0" + b
    return b"\x02" + der_length(len(b)) + b


def ecdsa_sig_der(report):
    """ECDSA-Sig-Value (RFC 3279) from the report's little-endian r and s."""
    r = int.from_bytes(report[R_OFF:R_OFF + RS_LEN], "little")
    s = int.from_bytes(report[S_OFF:S_OFF + RS_LEN], "little")
    body = der_integer(r) + der_integer(s)
    return b"\x30" + der_length(len(body)) + body


def openssl(*args):
    p = subprocess.run(["openssl", *args], capture_output=True)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace").strip()


def to_pem(data, tmp, name):
    """Write a certificate (DER or PEM bytes) to tmp/name as PEM."""
    path = os.path.join(tmp, name)
    src = os.path.join(tmp, name + ".in")
    with open(src, "wb") as f:
        f.write(data)
    form = "PEM" if data.lstrip().startswith(b"-----BEGIN") else "DER"
    rc, out = openssl("x509", "-inform", form, "-in", src, "-out", path)
    if rc:
        raise ValueError(f"{name}: not a certificate ({out.splitlines()[-1] if out else rc})")
    return path


def to_der(cert):
    """A certificate (DER or PEM bytes) as DER."""
    if not cert.lstrip().startswith(b"-----BEGIN"):
        return cert
    return subprocess.run(["openssl", "x509", "-outform", "DER"], input=cert,
                          capture_output=True).stdout


def split_pem(data):
    """The PEM certificates of a bundle, in order."""
    out, cur = [], []
    for line in data.decode().splitlines(keepends=True):
        if line.startswith("-----BEGIN CERTIFICATE"):
            cur = [line]
        elif cur:
            cur.append(line)
            if line.startswith("-----END CERTIFICATE"):
                out.append("".join(cur).encode())
                cur = []
    return out


def verify(report, vcek, ask, ark, nonce=None, vmpl=None):
    """[(ok, text)] for each check; certificates are DER or PEM bytes."""
    checks = []
    f = report_fields(report) if len(report) >= REPORT_SIZE else None
    checks.append((len(report) == REPORT_SIZE, f"report size 0x{len(report):x} (want 0x4a0)"))
    if f is None:
        return checks
    checks.append((f["version"] in (2, 3), f"report version {f['version']} (want 2 or 3)"))
    checks.append((f["signature_algo"] == 1,
                   f"signature algorithm {f['signature_algo']} (want 1, ECDSA P-384 SHA-384)"))
    with tempfile.TemporaryDirectory(prefix="snp-verify.") as tmp:
        try:
            vcek_pem = to_pem(vcek, tmp, "vcek.pem")
            ask_pem = to_pem(ask, tmp, "ask.pem")
            ark_pem = to_pem(ark, tmp, "ark.pem")
        except ValueError as e:
            checks.append((False, str(e)))
            return checks
        rc, out = openssl("verify", "-check_ss_sig", "-CAfile", ark_pem,
                          "-untrusted", ask_pem, vcek_pem)
        out = out.replace(tmp + "/", "")
        checks.append((rc == 0, "chain ARK -> ASK -> VCEK: openssl verify: "
                       + (out.splitlines()[-1] if out else f"exit {rc}")))
        pub = os.path.join(tmp, "vcek.pub")
        openssl("x509", "-in", vcek_pem, "-pubkey", "-noout", "-out", pub)
        signed = os.path.join(tmp, "signed.bin")
        sig = os.path.join(tmp, "sig.der")
        with open(signed, "wb") as fh:
            fh.write(report[:SIGNED_SIZE])
        with open(sig, "wb") as fh:
            fh.write(ecdsa_sig_der(report))
        rc, out = openssl("dgst", "-sha384", "-verify", pub, "-signature", sig, signed)
        checks.append((rc == 0 and "Verified OK" in out,
                       "signature over [0, 0x2a0) with the VCEK: openssl dgst: "
                       + (out.splitlines()[-1] if out else f"exit {rc}")))
        checks += tcb_checks(f, vcek_pem)
    if nonce is not None:
        checks.append((f["report_data"] == nonce, "REPORT_DATA equals the nonce"
                       + ("" if f["report_data"] == nonce
                          else f" (report has {f['report_data'].hex()})")))
    if vmpl is not None:
        checks.append((f["vmpl"] == vmpl, f"VMPL {f['vmpl']} (want {vmpl})"))
    return checks


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("report")
    p.add_argument("--auxblob", help="certificate table (VCEK, ASK, ARK) from the guest")
    p.add_argument("--vcek", help="VCEK certificate, DER or PEM")
    p.add_argument("--chain", help="ASK then ARK, PEM (AMD's ask_ark.pem)")
    p.add_argument("--ark", help="the ARK the verifier trusts (default: from --chain)")
    p.add_argument("--nonce", help="expected REPORT_DATA, hex")
    p.add_argument("--vmpl", type=int)
    a = p.parse_args()

    with open(a.report, "rb") as fh:
        report = fh.read()
    vcek = ask = ark = None
    if a.auxblob:
        with open(a.auxblob, "rb") as fh:
            try:
                table = cert_table(fh.read())
            except ValueError as e:
                print(f"not ok - auxblob: {e}")
                return 1
        vcek, ask, ark = table.get(GUID_VCEK), table.get(GUID_ASK), table.get(GUID_ARK)
    if a.vcek:
        with open(a.vcek, "rb") as fh:
            vcek = fh.read()
    if a.chain:
        with open(a.chain, "rb") as fh:
            bundle = split_pem(fh.read())
        if len(bundle) != 2:
            print(f"not ok - {a.chain}: want 2 certificates (ASK, ARK), found {len(bundle)}")
            return 1
        ask, ark = bundle
    if a.ark:
        with open(a.ark, "rb") as fh:
            trusted = fh.read()
        if ark is not None and a.auxblob and not a.chain:
            same = to_der(ark) == to_der(trusted)
            print(f"{'ok' if same else 'not ok'} - the table's ARK is the trusted ARK")
            if not same:
                return 1
        ark = trusted
    missing = [n for n, c in (("VCEK", vcek), ("ASK", ask), ("ARK", ark)) if c is None]
    if missing:
        print(f"not ok - certificates missing: {', '.join(missing)}")
        return 1
    nonce = bytes.fromhex(a.nonce) if a.nonce else None
    bad = 0
    for ok, text in verify(report, vcek, ask, ark, nonce, a.vmpl):
        print(f"{'ok' if ok else 'not ok'} - {text}")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
