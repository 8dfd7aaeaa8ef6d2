#!/usr/bin/env bash
# snp-certs.sh - make the fake AMD certificate chain the SEV-SNP responder signs with.
#
# Usage: scripts/snp-certs.sh OUTDIR
#
#   OUTDIR/ark.{key,pem,der}   fake ARK: RSA-4096, self-signed, RSASSA-PSS with SHA-384
#   OUTDIR/ask.{key,pem,der}   fake ASK: RSA-4096, signed by the ARK, RSASSA-PSS
#   OUTDIR/vcek.{key,pem,der}  fake VCEK: ECDSA P-384, signed by the ASK, RSASSA-PSS, with
#                              AMD's extensions: the chip's hwID and the TCB's SPLs
#   OUTDIR/chip_id.hex         that hwID, 64 random bytes: the responder's chip-id
#   OUTDIR/vcek-otherchip.{pem,der}  the same VCEK key certified for another chip: a
#                              verifier must refuse a report of ours with it
#   OUTDIR/ask_ark.pem         ASK then ARK, the shape of AMD's cert_chain file
#
#   The same shape as AMD's Milan chain (see ../shared/testdata/snp-milan): the PSS
#   parameters SHA-384 / MGF1-SHA-384 / salt 48, CA constraints on ARK and ASK.  The keys
#   are made here, at build time, and stay in build/: none is ever committed.  Run again
#   with a complete OUTDIR, it does nothing.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
out=$1
[ -s "$out/ask_ark.pem" ] && [ -s "$out/vcek-otherchip.der" ] && exit 0
tmp=$(mktemp -d "${out%/}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
umask 077

pss=(-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384)
subj() { echo "/OU=Engineering/C=US/L=Santa Clara/ST=CA/O=reseed-lab fake AMD/CN=$1"; }

# The TCB the VCEK is for, as AMD's VCEK extensions carry it (1.3.6.1.4.1.3704.1.3.x: a
# DER INTEGER each): the responder's default 'tcb' property, docs/snp-responder.md.
bl_spl=3 tee_spl=0 snp_spl=8 ucode_spl=115
der_int() { printf '02:01:%02x' "$1"; }
colons() { sed 's/../&:/g; s/:$//'; }
openssl rand -hex 64 >"$tmp/chip_id.hex"
other_chip=$(openssl rand -hex 64)

vcek_ext() {	# SECTION HWID-HEX
	cat <<EOX
[$1]
basicConstraints = critical,CA:false
keyUsage = critical,digitalSignature
1.3.6.1.4.1.3704.1.3.1 = DER:$(der_int $bl_spl)
1.3.6.1.4.1.3704.1.3.2 = DER:$(der_int $tee_spl)
1.3.6.1.4.1.3704.1.3.3 = DER:$(der_int $snp_spl)
1.3.6.1.4.1.3704.1.3.8 = DER:$(der_int $ucode_spl)
1.3.6.1.4.1.3704.1.4 = DER:$(colons <<<"$2")
EOX
}
{
	cat <<EOX
[ca]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
EOX
	vcek_ext vcek "$(cat "$tmp/chip_id.hex")"
	vcek_ext other "$other_chip"
} >"$tmp/ext.cnf"

openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$tmp/ark.key"
openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$tmp/ask.key"
openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-384 \
	-pkeyopt ec_param_enc:named_curve -out "$tmp/vcek.key"

openssl req -new -x509 -key "$tmp/ark.key" -sha384 "${pss[@]}" -days 9000 \
	-subj "$(subj ARK-Milan)" -set_serial 1 \
	-extensions ca -config "$tmp/ext.cnf" -out "$tmp/ark.pem"
openssl req -new -key "$tmp/ask.key" -subj "$(subj SEV-Milan)" -out "$tmp/ask.csr"
openssl x509 -req -in "$tmp/ask.csr" -CA "$tmp/ark.pem" -CAkey "$tmp/ark.key" \
	-sha384 "${pss[@]}" -days 9000 -set_serial 2 \
	-extensions ca -extfile "$tmp/ext.cnf" -out "$tmp/ask.pem" 2>/dev/null
openssl req -new -key "$tmp/vcek.key" -subj "$(subj SEV-VCEK)" -out "$tmp/vcek.csr"
openssl x509 -req -in "$tmp/vcek.csr" -CA "$tmp/ask.pem" -CAkey "$tmp/ask.key" \
	-sha384 "${pss[@]}" -days 9000 -set_serial 0 \
	-extensions vcek -extfile "$tmp/ext.cnf" -out "$tmp/vcek.pem" 2>/dev/null
openssl x509 -req -in "$tmp/vcek.csr" -CA "$tmp/ask.pem" -CAkey "$tmp/ask.key" \
	-sha384 "${pss[@]}" -days 9000 -set_serial 1 \
	-extensions other -extfile "$tmp/ext.cnf" -out "$tmp/vcek-otherchip.pem" 2>/dev/null

for c in ark ask vcek vcek-otherchip; do
	openssl x509 -in "$tmp/$c.pem" -outform DER -out "$tmp/$c.der"
done
cat "$tmp/ask.pem" "$tmp/ark.pem" >"$tmp/ask_ark.pem"
# The chain must verify as AMD's does, or nothing downstream means anything.
openssl verify -CAfile "$tmp/ark.pem" -untrusted "$tmp/ask.pem" "$tmp/vcek.pem" >/dev/null
rm -f "$tmp"/*.csr "$tmp/ext.cnf"
chmod 644 "$tmp"/*.pem "$tmp"/*.der "$tmp/chip_id.hex"
mkdir -p "$out"
mv "$tmp"/* "$out"/
