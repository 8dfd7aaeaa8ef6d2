// SPDX-License-Identifier: GPL-2.0
/*
 * RandJava is the Java consumer of the user-space clone suite (docs/userspace.md).  Run
 * by the agent (us_agent.c) with three slots of the ring (us_ring.h) from RESEED_US_SLOT
 * on, it draws in turn 16 bytes from new SecureRandom() (the platform default: NativePRNG
 * on Linux, the kernel's bytes mixed with a SHA1PRNG state), 16 bytes from
 * SecureRandom.getInstance("DRBG") (the JDK's Hash_DRBG, seeded when first used) and
 * one UUID.randomUUID(), and records each output as the C consumers' us_put() does,
 * paced as they are.  Compiled with --release 17: it runs on Debian 12's OpenJDK 17 and
 * Debian 13's 21.
 */

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.UUID;

public final class RandJava {
	// us_ring.h, whose US_SLOTS this must match: the mapping's size
	private static final long US_MAGIC = 0x2173676e69727375L;
	private static final int US_SLOTS = 20;
	private static final int US_CAPACITY = 1 << 16;
	private static final int US_WIDTH = 16;
	private static final int US_BATCH = 128;
	private static final long US_PAUSE_MS = 40;
	private static final int US_ENTRIES_OFF = 4096;
	private static final long US_RING_SIZE =
		US_ENTRIES_OFF + (long)US_SLOTS * US_CAPACITY * US_WIDTH;
	private static final int SLOT_OFF = 64;		/* offsetof(struct us_header, slot) */
	private static final int SLOT_SIZE = 64;
	private static final VarHandle LONGS =
		MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

	private final MappedByteBuffer ring;
	private final int slot;

	private RandJava(MappedByteBuffer ring, int first, int i, String name) {
		int used = ring.getInt(20);
		int k = first + i;

		if (k < 0 || k >= used)
			die("slot " + k + " of " + used);
		this.ring = ring;
		this.slot = k;
		int s = SLOT_OFF + k * SLOT_SIZE;
		byte[] label = name.getBytes(StandardCharsets.US_ASCII);
		for (int j = 0; j < 24; j++)
			ring.put(s + 8 + j, j < Math.min(label.length, 23) ? label[j] : 0);
		ring.putInt(s + 32, US_WIDTH);
		ring.putInt(s + 36, (int)ProcessHandle.current().pid());
	}

	/* One output: the entry, then its count with a release store. */
	private void put(byte[] out) throws InterruptedException {
		int c = SLOT_OFF + slot * SLOT_SIZE;
		long n = (long)LONGS.getAcquire(ring, c);
		int e = US_ENTRIES_OFF + slot * US_CAPACITY * US_WIDTH +
			(int)(n % US_CAPACITY) * US_WIDTH;

		for (int j = 0; j < US_WIDTH; j++)
			ring.put(e + j, j < out.length ? out[j] : 0);
		LONGS.setRelease(ring, c, n + 1);
		if ((n + 1) % US_BATCH == 0)
			Thread.sleep(US_PAUSE_MS);
	}

	private static void die(String what) {
		System.err.println("# userspace: consumer " + ProcessHandle.current().pid() +
				   ": " + what);
		System.exit(1);
	}

	private static byte[] uuidBytes(UUID u) {
		byte[] b = new byte[16];
		long hi = u.getMostSignificantBits(), lo = u.getLeastSignificantBits();

		for (int j = 0; j < 8; j++) {
			b[j] = (byte)(hi >>> (56 - 8 * j));
			b[8 + j] = (byte)(lo >>> (56 - 8 * j));
		}
		return b;
	}

	public static void main(String[] args) throws IOException, InterruptedException {
		String path = System.getenv("RESEED_US_RING");
		String first = System.getenv("RESEED_US_SLOT");
		int k = -1;

		try {
			k = Integer.parseInt(first == null ? "" : first);
		} catch (NumberFormatException e) {
			die("RESEED_US_RING and RESEED_US_SLOT (run by us_agent)");
		}
		if (path == null)
			die("RESEED_US_RING and RESEED_US_SLOT (run by us_agent)");
		MappedByteBuffer ring;
		try (FileChannel f = FileChannel.open(Path.of(path), StandardOpenOption.READ,
						      StandardOpenOption.WRITE)) {
			ring = f.map(FileChannel.MapMode.READ_WRITE, 0, US_RING_SIZE);
		}
		ring.order(ByteOrder.LITTLE_ENDIAN);
		if (ring.getLong(0) != US_MAGIC)
			die("not a ring file");

		SecureRandom platform = new SecureRandom();
		SecureRandom drbg = null;
		try {
			drbg = SecureRandom.getInstance("DRBG");
		} catch (NoSuchAlgorithmException e) {
			die("no DRBG: " + e);
		}
		RandJava a = new RandJava(ring, k, 0, "java-SecureRandom");
		RandJava b = new RandJava(ring, k, 1, "java-DRBG");
		RandJava c = new RandJava(ring, k, 2, "java-UUID");
		byte[] out = new byte[16];

		for (;;) {
			platform.nextBytes(out);
			a.put(out);
			drbg.nextBytes(out);
			b.put(out);
			c.put(uuidBytes(UUID.randomUUID()));
		}
	}
}
