# The device set of the reseed-lab QEMU: an i440FX PC with virtio-pci, the devices the
# guest tests and snapshot scenarios use, and nothing else.  Copied by
# scripts/build-qemu.sh to configs/devices/x86_64-softmmu/reseed-lab.mak.
CONFIG_I440FX=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_RNG=y
# x-leak-fault and x-leak-storm, for the hostile-host tests (check-hostile, the qtests)
CONFIG_VIRTIO_RNG_FAULT_INJECTION=y
CONFIG_VIRTIO_BLK=y
CONFIG_ACPI_VMGENID=y
# libqos starts '-M pc' with its default VGA: the qtests need one.
CONFIG_VGA_PCI=y
CONFIG_PARALLEL=y
CONFIG_E1000_PCI=y
CONFIG_SEV_SNP_RESPONDER=y
# QEMU 10.0: hw/i386/Kconfig's PC "imply"s FDC_ISA where 7.2 "select"ed it, so
# --without-default-devices drops the floppy controller that 7.2's '-M pc' has; a
# 7.2 migration stream then fails on its 'fdc' section.  Keep 7.2's device set.
CONFIG_FDC_ISA=y
