# The one place where the pristine source versions are pinned.
# When Debian no longer serves a pinned version, scripts/sources.sh warns and uses the
# newest one it offers; the series must still apply (git am -3).
QEMU_DEB_VERSION  := 1:7.2+dfsg-7+deb12u18
LINUX_DEB_VERSION := 6.1.192-3
