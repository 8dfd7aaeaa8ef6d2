// SPDX-License-Identifier: Apache-2.0
/*
 * epoch_drbg.c - EPOCH-DRBG, an OpenSSL 3 provider whose DRBG reseeds when the RNG
 * epoch moved (a VM snapshot was taken or restored, or a clone started).
 *
 * Each instance wraps a CTR-DRBG (AES-256-CTR with derivation function, OpenSSL's
 * default) fetched from the providers the application loaded, and seeded from the
 * operating system directly.  Before every generate it reads the RNG epoch: the word
 * of the page that ioctl(RNDEPOCH) on /dev/random maps read-only, and the VM generation
 * counter the kernel maps after it where a hypervisor offers one (struct
 * rand_epoch_data).  When either differs from what the instance saw at its last seed,
 * it reseeds from the kernel with prediction resistance before producing anything:
 * after a restore the kernel has moved the epoch before any vCPU ran, and the kernel's
 * own output differs per clone.
 *
 * Selected for every program by openssl.cnf ([random] random = EPOCH-DRBG, the provider
 * loaded in the providers section): the core then makes its primary, public and
 * private DRBGs of it.  Their wrapped DRBGs form the same hierarchy as the default
 * chain's: an instance whose parent is an EPOCH-DRBG wraps a CTR-DRBG whose parent is
 * that instance's, so a fork or a reseed propagates as OpenSSL's own tests expect (the
 * primary reseeds in a forked child).  At an epoch move the root reseeds first, from
 * the kernel, once per move whichever child saw it first, then the child from it: each
 * DRBG reseeds once per move.  A child seeded from a parent that has not reseeded since
 * the last move (a thread's first DRBG after a restore) counts as seeded before it.
 * Without a parent, or under a parent of another provider, the wrapped DRBG seeds from
 * the kernel directly; as the parent of another provider's DRBG, an instance hands out
 * seed material from its own generate, epoch check included.
 *
 * Where the kernel has no RNDEPOCH, the provider says so once on stderr and behaves as
 * the CTR-DRBG it wraps.  Fork: the wrapped DRBG reseeds in the child by itself
 * (OpenSSL's fork detection), and the epoch mapping is shared, read-only.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#ifndef RNDEPOCH
#define RNDEPOCH _IO('R', 0x08)		/* <linux/random.h> of the RNG epoch series */
#endif

/* rand_epoch_data.vm_counter_offset, in 32-bit words: byte 256, 0 without a VM counter */
#define EPOCH_VM_COUNTER_OFFSET_WORD	64

#define EPOCH_DRBG_INNER	"CTR-DRBG"
#define EPOCH_DRBG_CIPHER	"AES-256-CTR"

/* --- the RNG epoch, mapped once per process */

static const uint64_t no_vm_counter;
static const volatile uint32_t *epoch_page;	/* NULL: the kernel has no RNG epoch */
static pthread_once_t epoch_once = PTHREAD_ONCE_INIT;

static void epoch_map(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd, efd = -1, err;
	void *p = MAP_FAILED;

	fd = open("/dev/random", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		efd = ioctl(fd, RNDEPOCH);
		err = errno;
		close(fd);
		errno = err;
	}
	if (efd >= 0) {
		p = mmap(NULL, pg, PROT_READ, MAP_SHARED, efd, 0);
		/* rand_epoch_data.vm_counter_offset: the kernel maps a second page */
		if (p != MAP_FAILED && ((const volatile uint32_t *)p)[EPOCH_VM_COUNTER_OFFSET_WORD]) {
			munmap(p, pg);
			p = mmap(NULL, 2 * pg, PROT_READ, MAP_SHARED, efd, 0);
		}
		err = errno;
		close(efd);
		errno = err;
	}
	if (p == MAP_FAILED) {
		fprintf(stderr, "EPOCH-DRBG: no RNG epoch (RNDEPOCH: %s): reseeding as %s only\n",
			strerror(errno), EPOCH_DRBG_INNER);
		return;
	}
	epoch_page = p;
}

struct epoch {
	uint32_t value;
	uint64_t vm;
};

static struct epoch epoch_read(void)
{
	struct epoch e = { 0, 0 };
	const volatile uint64_t *vm = &no_vm_counter;
	uint32_t off;

	if (!epoch_page)
		return e;
	e.value = __atomic_load_n(epoch_page, __ATOMIC_ACQUIRE);
	off = epoch_page[EPOCH_VM_COUNTER_OFFSET_WORD];
	if (off)
		vm = (const volatile uint64_t *)((const volatile char *)epoch_page + off);
	e.vm = __atomic_load_n(vm, __ATOMIC_ACQUIRE);
	return e;
}

/* --- the wrapped CTR-DRBG */

/*
 * The default provider's CTR-DRBG, called through its dispatch table rather than EVP:
 * EVP_RAND_generate() on it would ask its max_request, a walk of its parameters, at
 * every call (on top of the core's own pass through EVP to this provider), about a
 * twentieth of a 16-byte RAND_bytes natively.  An instance's lock is the wrapped
 * DRBG's: the core locks an instance as OpenSSL's hierarchy locks a parent, and both
 * take the one lock.
 */
struct inner {
	EVP_RAND *rand;			/* holds the default provider loaded */
	void *provctx;
	const OSSL_DISPATCH *dispatch;	/* a child's parent calls */
	OSSL_FUNC_rand_newctx_fn *newctx;
	OSSL_FUNC_rand_freectx_fn *freectx;
	OSSL_FUNC_rand_instantiate_fn *instantiate;
	OSSL_FUNC_rand_uninstantiate_fn *uninstantiate;
	OSSL_FUNC_rand_generate_fn *generate;
	OSSL_FUNC_rand_reseed_fn *reseed;
	OSSL_FUNC_rand_enable_locking_fn *enable_locking;
	OSSL_FUNC_rand_lock_fn *lock;
	OSSL_FUNC_rand_unlock_fn *unlock;
	OSSL_FUNC_rand_gettable_ctx_params_fn *gettable_ctx_params;
	OSSL_FUNC_rand_settable_ctx_params_fn *settable_ctx_params;
	OSSL_FUNC_rand_get_ctx_params_fn *get_ctx_params;
	OSSL_FUNC_rand_set_ctx_params_fn *set_ctx_params;
	OSSL_FUNC_rand_verify_zeroization_fn *verify_zeroization;
};

static int has_name(const char *names, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = names; (p = strstr(p, name)); p += n)
		if ((p == names || p[-1] == ':') && (p[n] == '\0' || p[n] == ':'))
			return 1;
	return 0;
}

static void inner_take(struct inner *in, const OSSL_DISPATCH *f)
{
	switch (f->function_id) {
	case OSSL_FUNC_RAND_NEWCTX:
		in->newctx = OSSL_FUNC_rand_newctx(f);
		break;
	case OSSL_FUNC_RAND_FREECTX:
		in->freectx = OSSL_FUNC_rand_freectx(f);
		break;
	case OSSL_FUNC_RAND_INSTANTIATE:
		in->instantiate = OSSL_FUNC_rand_instantiate(f);
		break;
	case OSSL_FUNC_RAND_UNINSTANTIATE:
		in->uninstantiate = OSSL_FUNC_rand_uninstantiate(f);
		break;
	case OSSL_FUNC_RAND_GENERATE:
		in->generate = OSSL_FUNC_rand_generate(f);
		break;
	case OSSL_FUNC_RAND_RESEED:
		in->reseed = OSSL_FUNC_rand_reseed(f);
		break;
	case OSSL_FUNC_RAND_ENABLE_LOCKING:
		in->enable_locking = OSSL_FUNC_rand_enable_locking(f);
		break;
	case OSSL_FUNC_RAND_LOCK:
		in->lock = OSSL_FUNC_rand_lock(f);
		break;
	case OSSL_FUNC_RAND_UNLOCK:
		in->unlock = OSSL_FUNC_rand_unlock(f);
		break;
	case OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS:
		in->gettable_ctx_params = OSSL_FUNC_rand_gettable_ctx_params(f);
		break;
	case OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS:
		in->settable_ctx_params = OSSL_FUNC_rand_settable_ctx_params(f);
		break;
	case OSSL_FUNC_RAND_GET_CTX_PARAMS:
		in->get_ctx_params = OSSL_FUNC_rand_get_ctx_params(f);
		break;
	case OSSL_FUNC_RAND_SET_CTX_PARAMS:
		in->set_ctx_params = OSSL_FUNC_rand_set_ctx_params(f);
		break;
	case OSSL_FUNC_RAND_VERIFY_ZEROIZATION:
		in->verify_zeroization = OSSL_FUNC_rand_verify_zeroization(f);
		break;
	}
}

/* Look the wrapped DRBG up in the application's default provider; 0 if it has none. */
static int inner_load(struct inner *in, OSSL_LIB_CTX *libctx)
{
	const OSSL_ALGORITHM *algs, *a;
	const OSSL_DISPATCH *f = NULL;
	const OSSL_PROVIDER *p;
	int no_cache = 0;

	in->rand = EVP_RAND_fetch(libctx, EPOCH_DRBG_INNER, "provider=default");
	p = in->rand ? EVP_RAND_get0_provider(in->rand) : NULL;
	algs = p ? OSSL_PROVIDER_query_operation(p, OSSL_OP_RAND, &no_cache) : NULL;
	for (a = algs; a && a->algorithm_names; a++)
		if (has_name(a->algorithm_names, EPOCH_DRBG_INNER)) {
			f = a->implementation;
			break;
		}
	if (algs)
		OSSL_PROVIDER_unquery_operation(p, OSSL_OP_RAND, algs);
	for (in->dispatch = f; f && f->function_id; f++)
		inner_take(in, f);
	in->provctx = p ? OSSL_PROVIDER_get0_provider_ctx(p) : NULL;
	/* what this file calls, and what a CTR-DRBG child asks of its parent */
	return in->newctx && in->freectx && in->instantiate && in->uninstantiate &&
	       in->generate && in->reseed && in->enable_locking && in->lock && in->unlock &&
	       in->get_ctx_params && in->set_ctx_params && in->gettable_ctx_params &&
	       in->settable_ctx_params && in->verify_zeroization;
}

/* --- the DRBG */

struct provider {
	const OSSL_CORE_HANDLE *handle;
	OSSL_LIB_CTX *libctx;		/* a child of the application's: its providers */
	pthread_mutex_t inner_lock;	/* loads inner once */
	int inner_loaded;		/* 1 loaded, -1 failed */
	struct inner inner;
};

static const OSSL_DISPATCH drbg_functions[];

struct drbg {
	const struct inner *in;
	struct drbg *up;		/* the parent, when an EPOCH-DRBG; held by the core */
	void *ictx;			/* the wrapped DRBG */
	struct epoch seen;		/* the epoch its last seed is fresh for */
	size_t max_request;		/* the wrapped DRBG's, which does not change */
};

static const struct inner *provider_inner(struct provider *prov)
{
	pthread_mutex_lock(&prov->inner_lock);
	if (!prov->inner_loaded)
		prov->inner_loaded = inner_load(&prov->inner, prov->libctx) ? 1 : -1;
	pthread_mutex_unlock(&prov->inner_lock);
	return prov->inner_loaded > 0 ? &prov->inner : NULL;
}

static int drbg_seeded(struct drbg *d, struct epoch e)
{
	d->seen = e;
	return 1;
}

static int drbg_lock(void *vctx);
static void drbg_unlock(void *vctx);

/*
 * The epoch a seed taken now is fresh for, read before the seed (a move during it shows
 * at the next output).  A root seeds from the kernel: the kernel's epoch.  A child seeds
 * from its parent, whose output is only as fresh as the parent's own last seed: the
 * parent's.  A child instantiated or reseeded after a move, under a parent that has not
 * reseeded since, holds state that every clone shares; it then reseeds, the parent
 * first, at its first output.
 */
static int seed_epoch(struct drbg *d, struct epoch *e)
{
	if (!d->up) {
		*e = epoch_read();
		return 1;
	}
	if (!drbg_lock(d->up))
		return 0;
	*e = d->up->seen;
	drbg_unlock(d->up);
	return 1;
}

static void *drbg_new(void *provctx, void *parent, const OSSL_DISPATCH *parent_calls)
{
	OSSL_PARAM params[] = {
		OSSL_PARAM_utf8_string(OSSL_DRBG_PARAM_CIPHER, (char *)EPOCH_DRBG_CIPHER,
				       sizeof(EPOCH_DRBG_CIPHER) - 1),
		OSSL_PARAM_END
	};
	OSSL_PARAM max_request[] = {
		OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
		OSSL_PARAM_END
	};
	/* The core hands a parent of this provider with this very dispatch table */
	struct drbg *up = parent_calls == drbg_functions ? parent : NULL;
	const struct inner *in = provider_inner(provctx);
	struct drbg *d;

	pthread_once(&epoch_once, epoch_map);
	if (!in)
		return NULL;
	d = OPENSSL_zalloc(sizeof(*d));
	if (!d)
		return NULL;
	d->in = in;
	d->up = up;
	max_request[0].data = &d->max_request;
	d->ictx = in->newctx(in->provctx, up ? up->ictx : NULL, up ? in->dispatch : NULL);
	if (!d->ictx || !in->set_ctx_params(d->ictx, params) ||
	    !in->get_ctx_params(d->ictx, max_request) || !d->max_request) {
		if (d->ictx)
			in->freectx(d->ictx);
		OPENSSL_free(d);
		return NULL;
	}
	return d;
}

static void drbg_free(void *vctx)
{
	struct drbg *d = vctx;

	if (!d)
		return;
	d->in->freectx(d->ictx);
	OPENSSL_free(d);
}

static int drbg_instantiate(void *vctx, unsigned int strength, int pr,
			    const unsigned char *pstr, size_t pstr_len, const OSSL_PARAM params[])
{
	struct drbg *d = vctx;
	struct epoch e;

	return seed_epoch(d, &e) &&
	       d->in->instantiate(d->ictx, strength, pr, pstr, pstr_len, params) &&
	       drbg_seeded(d, e);
}

static int drbg_uninstantiate(void *vctx)
{
	struct drbg *d = vctx;

	return d->in->uninstantiate(d->ictx);
}

static int drbg_reseed(void *vctx, int pr, const unsigned char *ent, size_t ent_len,
		       const unsigned char *adin, size_t adin_len)
{
	struct drbg *d = vctx;
	struct epoch e;

	return seed_epoch(d, &e) && d->in->reseed(d->ictx, pr, ent, ent_len, adin, adin_len) &&
	       drbg_seeded(d, e);
}

static int epoch_moved(const struct drbg *d, struct epoch e)
{
	return e.value != d->seen.value || e.vm != d->seen.vm;
}

/*
 * d saw the epoch at e, not at its last seed: reseed it.  The root reseeds from the
 * kernel; a child first brings its parent (locked, as OpenSSL's hierarchy locks a parent
 * under its child) to e, unless another child did, then takes its seed from it.
 */
static int epoch_reseed(struct drbg *d, struct epoch e)
{
	struct drbg *up = d->up;
	int ok;

	if (!up)
		return drbg_reseed(d, 1, NULL, 0, NULL, 0);
	if (!drbg_lock(up))
		return 0;
	ok = !epoch_moved(up, e) || epoch_reseed(up, e);
	drbg_unlock(up);
	return ok && drbg_reseed(d, 0, NULL, 0, NULL, 0);
}

/* Called with the instance locked (when it locks), as EVP calls a DRBG. */
static int drbg_generate(void *vctx, unsigned char *out, size_t outlen, unsigned int strength,
			 int pr, const unsigned char *adin, size_t adin_len)
{
	struct drbg *d = vctx;
	struct epoch e = epoch_read();
	size_t n;

	if (epoch_moved(d, e) && !epoch_reseed(d, e))
		return 0;
	/* EVP asks at most max_request; a seed for another provider's DRBG may ask more */
	for (; outlen; outlen -= n, out += n, pr = 0) {
		n = outlen < d->max_request ? outlen : d->max_request;
		if (!d->in->generate(d->ictx, out, n, strength, pr, adin, adin_len))
			return 0;
	}
	return 1;
}

static int drbg_enable_locking(void *vctx)
{
	struct drbg *d = vctx;

	return d->in->enable_locking(d->ictx);
}

static int drbg_lock(void *vctx)
{
	struct drbg *d = vctx;

	return d->in->lock(d->ictx);
}

static void drbg_unlock(void *vctx)
{
	struct drbg *d = vctx;

	d->in->unlock(d->ictx);
}

/* The parameters are the wrapped DRBG's: state, strength, max_request, reseed counts. */
static const OSSL_PARAM drbg_gettable_default[] = {
	OSSL_PARAM_int(OSSL_RAND_PARAM_STATE, NULL),
	OSSL_PARAM_uint(OSSL_RAND_PARAM_STRENGTH, NULL),
	OSSL_PARAM_size_t(OSSL_RAND_PARAM_MAX_REQUEST, NULL),
	OSSL_PARAM_END
};

static const OSSL_PARAM *drbg_gettable_ctx_params(void *vctx, void *provctx)
{
	struct drbg *d = vctx;

	(void)provctx;
	return d ? d->in->gettable_ctx_params(d->ictx, d->in->provctx) : drbg_gettable_default;
}

static int drbg_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
	struct drbg *d = vctx;

	/*
	 * EVP_RAND_generate() asks for max_request alone before every generate: answered
	 * here, that costs no walk of the wrapped DRBG's parameters (a third of the time of
	 * a 16-byte RAND_bytes under emulation).  The core holds the instance's lock.
	 */
	if (params[0].key && !strcmp(params[0].key, OSSL_RAND_PARAM_MAX_REQUEST) &&
	    !params[1].key)
		return OSSL_PARAM_set_size_t(&params[0], d->max_request);
	return d->in->get_ctx_params(d->ictx, params);
}

static const OSSL_PARAM *drbg_settable_ctx_params(void *vctx, void *provctx)
{
	static const OSSL_PARAM none[] = { OSSL_PARAM_END };
	struct drbg *d = vctx;

	(void)provctx;
	return d ? d->in->settable_ctx_params(d->ictx, d->in->provctx) : none;
}

static int drbg_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
	struct drbg *d = vctx;

	return d->in->set_ctx_params(d->ictx, params);
}

static int drbg_verify_zeroization(void *vctx)
{
	struct drbg *d = vctx;

	return d->in->verify_zeroization(d->ictx);
}

/* As the parent of another DRBG: seed material from this one's output. */
static size_t drbg_get_seed(void *vctx, unsigned char **pout, int entropy, size_t min_len,
			    size_t max_len, int pr, const unsigned char *adin, size_t adin_len)
{
	unsigned char *buf;
	int ok = 0;

	(void)entropy;
	(void)max_len;
	buf = OPENSSL_secure_malloc(min_len);
	if (!buf)
		return 0;
	if (drbg_lock(vctx)) {
		ok = drbg_generate(vctx, buf, min_len, 0, pr, adin, adin_len);
		drbg_unlock(vctx);
	}
	if (!ok) {
		OPENSSL_secure_clear_free(buf, min_len);
		return 0;
	}
	*pout = buf;
	return min_len;
}

static void drbg_clear_seed(void *vctx, unsigned char *buf, size_t len)
{
	(void)vctx;
	OPENSSL_secure_clear_free(buf, len);
}

static const OSSL_DISPATCH drbg_functions[] = {
	{ OSSL_FUNC_RAND_NEWCTX, (void (*)(void))drbg_new },
	{ OSSL_FUNC_RAND_FREECTX, (void (*)(void))drbg_free },
	{ OSSL_FUNC_RAND_INSTANTIATE, (void (*)(void))drbg_instantiate },
	{ OSSL_FUNC_RAND_UNINSTANTIATE, (void (*)(void))drbg_uninstantiate },
	{ OSSL_FUNC_RAND_GENERATE, (void (*)(void))drbg_generate },
	{ OSSL_FUNC_RAND_RESEED, (void (*)(void))drbg_reseed },
	{ OSSL_FUNC_RAND_ENABLE_LOCKING, (void (*)(void))drbg_enable_locking },
	{ OSSL_FUNC_RAND_LOCK, (void (*)(void))drbg_lock },
	{ OSSL_FUNC_RAND_UNLOCK, (void (*)(void))drbg_unlock },
	{ OSSL_FUNC_RAND_GETTABLE_CTX_PARAMS, (void (*)(void))drbg_gettable_ctx_params },
	{ OSSL_FUNC_RAND_GET_CTX_PARAMS, (void (*)(void))drbg_get_ctx_params },
	{ OSSL_FUNC_RAND_SETTABLE_CTX_PARAMS, (void (*)(void))drbg_settable_ctx_params },
	{ OSSL_FUNC_RAND_SET_CTX_PARAMS, (void (*)(void))drbg_set_ctx_params },
	{ OSSL_FUNC_RAND_VERIFY_ZEROIZATION, (void (*)(void))drbg_verify_zeroization },
	{ OSSL_FUNC_RAND_GET_SEED, (void (*)(void))drbg_get_seed },
	{ OSSL_FUNC_RAND_CLEAR_SEED, (void (*)(void))drbg_clear_seed },
	{ 0, NULL }
};

static const OSSL_ALGORITHM provider_rands[] = {
	{ "EPOCH-DRBG", "provider=epoch-drbg", drbg_functions,
	  "CTR-DRBG that reseeds when the RNG epoch moved" },
	{ NULL, NULL, NULL, NULL }
};

/* --- the provider */

static const OSSL_ALGORITHM *provider_query(void *provctx, int operation, int *no_cache)
{
	(void)provctx;
	*no_cache = 0;
	return operation == OSSL_OP_RAND ? provider_rands : NULL;
}

static const OSSL_PARAM provider_param_types[] = {
	OSSL_PARAM_DEFN(OSSL_PROV_PARAM_NAME, OSSL_PARAM_UTF8_PTR, NULL, 0),
	OSSL_PARAM_DEFN(OSSL_PROV_PARAM_VERSION, OSSL_PARAM_UTF8_PTR, NULL, 0),
	OSSL_PARAM_DEFN(OSSL_PROV_PARAM_STATUS, OSSL_PARAM_INTEGER, NULL, 0),
	OSSL_PARAM_END
};

static const OSSL_PARAM *provider_gettable_params(void *provctx)
{
	(void)provctx;
	return provider_param_types;
}

static int provider_get_params(void *provctx, OSSL_PARAM params[])
{
	OSSL_PARAM *p;

	(void)provctx;
	p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
	if (p && !OSSL_PARAM_set_utf8_ptr(p, "reseed-lab EPOCH-DRBG provider"))
		return 0;
	p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
	if (p && !OSSL_PARAM_set_utf8_ptr(p, EPOCH_DRBG_VERSION))
		return 0;
	p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
	if (p && !OSSL_PARAM_set_int(p, 1))
		return 0;
	return 1;
}

static void provider_teardown(void *provctx)
{
	struct provider *prov = provctx;

	EVP_RAND_free(prov->inner.rand);
	pthread_mutex_destroy(&prov->inner_lock);
	OSSL_LIB_CTX_free(prov->libctx);
	OPENSSL_free(prov);
}

static const OSSL_DISPATCH provider_functions[] = {
	{ OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))provider_teardown },
	{ OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))provider_query },
	{ OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))provider_gettable_params },
	{ OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))provider_get_params },
	{ 0, NULL }
};

int OSSL_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
		       const OSSL_DISPATCH **out, void **provctx)
{
	struct provider *prov = OPENSSL_zalloc(sizeof(*prov));

	if (!prov)
		return 0;
	prov->handle = handle;
	pthread_mutex_init(&prov->inner_lock, NULL);
	prov->libctx = OSSL_LIB_CTX_new_child(handle, in);
	if (!prov->libctx) {
		OPENSSL_free(prov);
		return 0;
	}
	*out = provider_functions;
	*provctx = prov;
	return 1;
}
