# The one place where the pristine source versions are pinned.
# When Debian no longer serves a pinned version, scripts/sources.sh warns and uses the
# newest one it offers; the series must still apply (git am -3).
QEMU_DEB_VERSION  := 1:7.2+dfsg-7+deb12u18
LINUX_DEB_VERSION := 6.1.192-3
# Debian's prebuilt upstream kernel, the reference for backported ABIs (io_uring
# sysctls) and an example of an operator's own kernel for the scenarios.
UPSTREAM_KERNEL_PACKAGE := linux-image-6.12.118+deb12-cloud-amd64-unsigned
