/* Function images: ELF validation and the discovery of syscall sites with a disassembler. */
#ifndef EMBER_IMG_H
#define EMBER_IMG_H

#include <stddef.h>
#include <stdint.h>

#define IMG_MAX_SEGS   16
#define IMG_MAX_PHNUM  64
#define IMG_INTERP_MAX 256 /* bytes of a PT_INTERP path, with its NUL */

/* prot bits use the values of PROT_READ/PROT_WRITE/PROT_EXEC */
struct img_seg {
	uint64_t vaddr; /* unrelocated, as in the file */
	uint64_t memsz;
	uint64_t filesz;
	uint64_t offset; /* file offset of the first byte */
	int prot;
};

struct img_elf {
	int pie;	/* 1 for an ET_DYN (static-PIE, or a PIE with PT_INTERP), 0 for ET_EXEC */
	uint64_t entry; /* unrelocated */
	uint64_t phdr_vaddr; /* unrelocated address of the program headers in memory (AT_PHDR) */
	uint16_t phnum;
	uint16_t phentsize;
	uint64_t lo, hi; /* page-aligned span of all PT_LOAD segments, unrelocated */
	int nsegs;
	struct img_seg segs[IMG_MAX_SEGS]; /* PT_LOAD segments in ascending vaddr order */
	uint64_t stack_size;		   /* from PT_GNU_STACK p_memsz, 0 if absent or 0 */
	int go; /* a Go program (its note "Go" in a PT_NOTE): see ember_config.syscalls, mem_bytes
		 */
	char interp[IMG_INTERP_MAX]; /* a dynamic program's PT_INTERP path, "" for a static one */
};

/*
 * Validates a static x86-64 ELF executable held in buf and describes it in out. Returns 0, or -1
 * with a one-line reason (no trailing newline) in err. Never reads outside buf.
 */
int img_elf_parse(const uint8_t *buf, size_t len, struct img_elf *out, char *err, size_t errlen);
/* The same checks of a shared library's segments, with none of an executable's (an entry, an
 * interpreter for its DT_NEEDED, AT_PHDR): entry and phdr_vaddr say nothing then. */
int img_elf_parse_lib(const uint8_t *buf, size_t len, struct img_elf *out, char *err,
		      size_t errlen);

/* The shared libraries a dynamic ELF file in buf names (DT_NEEDED), in order, into names (at
 * most max, each a plain file name): 0 with *n, or -1 with the reason. A file with a name that
 * holds a '/' is refused (ld.so would open that path as it is). */
#define IMG_NEEDED_NAME 256
int img_needed(const uint8_t *buf, size_t len, char (*names)[IMG_NEEDED_NAME], int max, int *n,
	       char *err, size_t errlen);

/* The syscall-like instructions found in an image's executable segments. */
struct img_sites {
	uint64_t *addr; /* unrelocated addresses of `syscall` (0f 05) instructions, ascending */
	size_t n;
	size_t cap;
	size_t int80;	   /* `int $0x80` instructions found */
	size_t sysenter;   /* `sysenter` instructions found */
	uint64_t bad_addr; /* address of the first int80/sysenter, for the error message */
	/* per site (redzone.c): 0 keeps the trapping form; else it may become `call *%rax`, and
	 * from IMG_PAD_MIN up it also has EMBER_RT_PAD_LEN bytes of its function's int3 padding
	 * at img_pad_of's distance, for a program without page 0 (EMBER_RT_ENTRY_REL) */
	uint8_t *callable;
	size_t ncallable; /* how many are */
};

/*
 * Disassembles every executable PT_LOAD segment of the image with capstone and records the
 * syscall sites. Uses the symbol table (when present) to restart decoding at each function's
 * start, so data between functions cannot desynchronise the sweep. Returns 0, or -1 with a reason
 * (-ENOMEM when out of memory).
 * An image with int80/sysenter still returns 0: they are refused only when executed.
 */
int img_find_sites(const uint8_t *buf, size_t len, const struct img_elf *elf, struct img_sites *out,
		   char *err, size_t errlen);
void img_sites_free(struct img_sites *s);

/* The syscall sites of the ELF file in buf (a shared library) with addr holding their file
 * offsets, for a mapping of the file made at run time (filesites.c): 0, -1 when it
 * is no ELF file Ember reads, or -ENOMEM. Free out with img_sites_free. */
int img_file_sites(const uint8_t *buf, size_t len, struct img_sites *out);

/* The functions' starts in the image's code (sites.c, ascending, each once) into *v (free it),
 * from its symbols (IMG_STARTS_SYMBOLS: .symtab, else .dynsym) and, for a Go program without a
 * .symtab, Go's own function table (IMG_STARTS_GO): 0, or -1 when out of memory. A malformed
 * table gives no starts. */
enum { IMG_STARTS_SYMBOLS = 1, IMG_STARTS_GO = 2 };
int img_func_starts(const uint8_t *buf, size_t len, const struct img_elf *elf, int from,
		    uint64_t **v, size_t *n);

/* Go's function table (pclntab.c): nfunc functions, each at text plus a 32-bit offset */
struct img_functab {
	const uint8_t *ent; /* nfunc pairs of 32-bit words (entry offset, data), then the end's */
	uint64_t nfunc;
	uint64_t text; /* runtime.text, unrelocated */
};
/* The table in buf's section .gopclntab (a PIE's .data.rel.ro.gopclntab), its nsh section
 * headers at shoff, their names in section shstrndx: 1 when it has the layout of Go 1.18 on,
 * 0 when there is none or anything else. Never reads outside buf. */
int img_go_functab(const uint8_t *buf, size_t len, uint64_t shoff, uint64_t nsh, uint64_t shstrndx,
		   struct img_functab *out);
/* the (unrelocated) entry of function i < t->nfunc */
uint64_t img_go_func(const struct img_functab *t, uint64_t i);

/* Marks the sites whose enclosing function (from the symbol table's starts, ascending) keeps no
 * data below its stack pointer and does not set rax beyond the page-0 sled just before them. */
/* callable[i] from IMG_PAD_MIN up: the padding starts at (site + 2) + callable[i] -
 * IMG_PAD_BIAS, within a `jmp rel8` of the site's end and back (-128 to 121 bytes) */
#define IMG_PAD_BIAS 130
#define IMG_PAD_MIN  2
static inline int64_t img_pad_of(uint8_t callable)
{
	return (int64_t)callable - IMG_PAD_BIAS;
}

int img_mark_callable(const uint8_t *buf, const struct img_elf *elf, const uint64_t *starts,
		      size_t nstarts, struct img_sites *sites);

/* A function image: the file's bytes, validated, with its syscall sites found once. */
struct img {
	uint8_t *buf;
	size_t len;
	struct img_elf elf;
	struct img_sites sites;
	uint64_t digest; /* xxHash64 of the file */
	int own;	 /* buf: IMG_OWN_HEAP (freed), IMG_OWN_MAP (unmapped), or borrowed */
	unsigned refs;	 /* a shared image (img_open_kept): its holders in this process */
	uint64_t key;	 /* a shared image's file identity (img_file_key), else 0 */
	/* its digest from the hint (img_open_hinted), its sites not yet read: their table's
	 * folder and key, for img_sites_fill; NULL once they are in sites */
	char *later_dir;
	uint64_t later_key;
};
enum { IMG_OWN_NONE, IMG_OWN_HEAP, IMG_OWN_MAP };

/* Tables of syscall sites kept on disk (img_table.c), so that an unchanged image is neither
 * hashed nor disassembled again. The version changes whenever what img_find_sites or
 * img_mark_callable decide changes: older tables are then not used. */
#define IMG_TABLE_VERSION 4
/* where the image of a load came from, and what it took */
enum img_from { IMG_SCANNED, IMG_TABLE, IMG_SHARED, IMG_HINT };
struct img_how {
	enum img_from from;
	uint64_t read_us;  /* opening, reading (or mapping) and hashing the file */
	uint64_t sites_us; /* finding its syscall sites, or reading their table */
};
/* the identity of a file as stat gives it (device, inode, size, modification and change
 * times), with the table version */
struct stat;
uint64_t img_file_key(const struct stat *st);
/* the table kept as DIR/KEY.sites for an image of len bytes: 0 with the sites and the file's
 * digest, or -1 when there is none or it is damaged (its own digest) or for another file */
int img_table_load(const char *dir, uint64_t key, size_t len, struct img_sites *s,
		   uint64_t *digest);
/* writes it (a whole new file, renamed over the old): 0 or -1 */
int img_table_save(const char *dir, uint64_t key, size_t len, const struct img_sites *s,
		   uint64_t digest);
/* The digest alone, beside the table: DIR/KEY.digest, a symbolic link whose target names it
 * with a check of its own. A short link's target lives in its inode, so reading it costs no
 * data block: a start from a snapshot knows the snapshot's folder without waiting for the
 * table's read, which only an init needs. 0 with the digest, or -1 when there is none or it is
 * damaged; the save replaces it in one rename (nothing when it cannot be written). */
int img_hint_load(const char *dir, uint64_t key, uint64_t *digest);
void img_hint_save(const char *dir, uint64_t key, uint64_t digest);
/* img_kept.c's: a shared image given back by one of its holders: 1 while others hold it, 0 when
 * it is to be freed (img_free: its memory and buf) */
int img_unshare(struct img *img);
void img_free(struct img *img);
/* The host's mapping of a file's bytes let go of (its page tables), after they were copied into
 * a machine: the page cache keeps them, which the kernel may reclaim, and they come back when
 * read again. Nothing for bytes in the heap or borrowed. */
void img_let_go(struct img *img);
/* img_open for a load: an image this process has open already (the same file, unchanged: its
 * identity) is shared; else, with dir (NULL: none), a file whose table is there is mapped, not
 * read, and its sites and digest taken from the table; else it is read, checked and scanned,
 * and its table written to dir. how (may be NULL) says which and what it took. */
int img_open_kept(const char *path, const char *dir, struct img **out, struct img_how *how,
		  char *err, size_t errlen);
/* img_open_kept where the file's digest hint is in dir: the file mapped and its ELF checked,
 * its digest taken from the hint (IMG_HINT), its sites left for img_sites_fill; without a hint,
 * as img_open_kept, and the hint written. */
int img_open_hinted(const char *path, const char *dir, struct img **out, struct img_how *how,
		    char *err, size_t errlen);
/* The sites of an image from img_open_hinted, once, before anything uses them (img_load_as
 * calls it): from its table, else found (the file hashed and scanned, the table and hint
 * written again). img->digest becomes the table's or the hash's, which differs from the hint's
 * only when the hint was wrong. 0, or a kind of failure with err (may be NULL). Thread-safe;
 * nothing for an image whose sites are known. */
int img_sites_fill(const struct img *img, char *err, size_t errlen);
/* the number of img's sites and of those that may become calls, 0 while they are left for
 * img_sites_fill (read under its lock: nothing is read from disk) */
void img_sites_counts(const struct img *img, size_t *n, size_t *ncallable);
/* img_sites_fill that says where they came from (how->from and sites_us set only when this
 * call read or found them) */
int img_sites_fill_how(const struct img *img, struct img_how *how, char *err, size_t errlen);
/* img_from_bytes for bytes that stay in place as long as the image (a bundle's file), named by
 * id (their bundle's digest and place): not copied, and with dir, their table kept there */
int img_from_bytes_kept(const void *buf, size_t len, uint64_t id, const char *dir, struct img **out,
			struct img_how *how, char *err, size_t errlen);

/* Reads and validates an executable (int $0x80 and sysenter are refused only when run). These and
 * img_load return 0 or a kind of failure of ember.h (EMBER_ERR_IMAGE, _CONFIG, _NOMEM, _IO,
 * EMBER_ERR). */
int img_open(const char *path, struct img **out, char *err, size_t errlen);
int img_from_bytes(const void *buf, size_t len, struct img **out, char *err, size_t errlen);
void img_close(struct img *img);

#define IMG_MAX_MAPS                                                                               \
	(IMG_MAX_SEGS * 4 + 6) /* the program's, its interpreter's, the runtime's                  \
				* five, the stack */

struct img_map {
	uint64_t start, end;
	int prot;
};

/* Where the language runtimes' images (js, lua) are: $EMBER_RUNTIME_DIR; else runtimes/ next to
 * the running program (a build tree: build/ember, build/runtimes/); else, when that is no
 * folder, IMG_RUNTIMES_INSTALLED beside the program's bin/ (an installed tree:
 * PREFIX/bin/ember, PREFIX/lib/ember/runtimes/). Never fails: out may name a missing folder. */
#define IMG_RUNTIMES_INSTALLED "lib/ember/runtimes"
void img_runtime_dir(char *out, size_t outlen);

/* A language runtime by name, as found in a runtime folder: the program that runs a handler's
 * source (given on fd 3), its arguments, its own files and the guest memory it needs */
struct img_runtime {
	char image[4096];    /* the program: the folder's own, or this host's (Node.js, CPython) */
	const char *argv[6]; /* argv[0], the loader's flags and script if any, the handler's name */
	char files[4096];    /* the runtime's files, seen at / under the function's, or "" */
	uint64_t mem;	     /* its default guest memory, 0: Ember's */
	const char *handler; /* the handler's file name in messages: handler.js */
	int handler_arg;     /* its place in argv */
};
/* name's runtime in dir (img_runtime_dir's), its program and files checked to be there; 0, or
 * -1 with why (an unknown name lists the known ones; a missing piece says how to get it) */
int img_runtime_find(const char *dir, const char *name, struct img_runtime *lang, char *why,
		     size_t whylen);
/* name is one of the known runtimes' (installed or not) */
int img_runtime_known(const char *name);
/* the known names, comma-separated, for messages and --help */
const char *img_runtime_names(void);

/* Where a loaded image put things in guest memory. */
struct img_layout {
	uint64_t base;	      /* load bias: 0 for ET_EXEC */
	uint64_t entry;	      /* where the vCPU starts: the interpreter's entry, else prog_entry */
	uint64_t prog_entry;  /* the program's, relocated (AT_ENTRY) */
	uint64_t interp_base; /* the interpreter's load bias (AT_BASE), 0 without one */
	uint64_t vdso_base;   /* the vDSO's (AT_SYSINFO_EHDR), 0 without one */
	uint64_t sp;	      /* initial stack pointer, at argc */
	uint64_t brk_start;
	uint64_t mmap_hi;
	uint64_t stack_lo, stack_hi, stack_size;
	uint64_t arg_start, arg_end; /* argv's strings, NUL-terminated one after the other */
	size_t rewritten;
	size_t sites_call, sites_trap; /* how the sites were rewritten */
	int guest;		       /* the in-guest runtime is mapped */
	int nmaps;
	struct img_map maps[IMG_MAX_MAPS]; /* what the image and its stack map */
};

struct vm;

/* The vDSO every program gets (vdso.c), parsed once; NULL only if the build's own is broken */
const struct img *img_vdso(void);

/* Copies the image (and a dynamic one's interpreter, when interp is not NULL) into a fresh
 * machine, rewrites their syscall sites, sets page permissions and builds the SysV start stack
 * (argv, envp, auxv with AT_BASE for the interpreter). Without guest, every site becomes
 * `out %al,$EMBER_HC_SYSCALL`; with it, the in-guest runtime and the page-0 sled are mapped and
 * the sites proven safe become `call *%rax`, the others keep the trapping form. */
int img_load(const struct img *img, const struct img *interp, struct vm *vm,
	     const char *const *argv, const char *const *envp, int guest, struct img_layout *out,
	     char *err, size_t errlen);
/* the same with AT_EXECFN naming name, as an execve's path (img_load's: argv[0]) */
int img_load_as(const struct img *img, const struct img *interp, struct vm *vm,
		const char *const *argv, const char *const *envp, const char *name, int guest,
		struct img_layout *out, char *err, size_t errlen);

#endif
