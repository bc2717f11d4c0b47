/* cli/npy.h - reading and writing NumPy .npy files as tapegrad tensors.
 *
 * Contract:
 *  - Built on the public API only (<tapegrad.h>): tensors are made with
 *    tg_empty, so the library's memory accounting and allocation-failure
 *    injection cover them. Nothing here aborts or exits; every function
 *    returns a tg_status and records the message for tg_last_error().
 *  - Reads format versions 1.0, 2.0 and 3.0 (3.0: UTF-8 header). Dtypes:
 *      '<f4' -> TG_F32, '<f8' -> TG_F64, '<i8' -> TG_I64,
 *      '<i4' -> TG_I64 (widened: int32 targets are common), '|b1' -> TG_BOOL
 *      (a byte other than 0 and 1 is read as true), '<V2' -> TG_BF16 (the
 *      convention for bfloat16, which NumPy itself lacks: the descr NumPy
 *      writes for ml_dtypes.bfloat16 arrays; raw 2-byte patterns).
 *    '|' and '=' (and no byte-order character) mean the machine's order,
 *    which is little-endian on every supported machine. Big-endian ('>')
 *    and every other dtype are refused with TG_ERR_IO.
 *  - fortran_order True is supported: the data is reordered into a C-order
 *    tensor of the declared shape (values identical to NumPy's array).
 *  - Shapes of 0 to 8 dims (TG_MAX_DIMS); () is a 0-d scalar; sizes may be 0.
 *  - Nothing in the file is trusted: a bad magic string, an unknown version,
 *    a header length past the end of the file or over 1 MiB, a header that is
 *    not a dict with exactly the keys 'descr', 'fortran_order' and 'shape',
 *    an unknown dtype, a negative or overflowing shape, data shorter than the
 *    shape needs, or bytes after the data -> TG_ERR_IO, with a message that
 *    starts with the file's path and says what is wrong.
 *  - Writes version 1.0 (2.0 only if the header would not fit in 65535
 *    bytes), C order, little-endian, header padded with spaces and a newline
 *    so that the data starts at a multiple of 64 bytes: byte for byte what
 *    NumPy >= 1.24 writes for the same array.
 * Names use the tgcli_ prefix: this is part of the command, not the library.
 */
#ifndef TAPEGRAD_CLI_NPY_H
#define TAPEGRAD_CLI_NPY_H

#include <stdio.h>

#include <tapegrad.h>

/* Largest header accepted when reading (bytes after the length field). */
#define TGCLI_NPY_MAX_HEADER (1u << 20)

/* Reads the .npy file at path into a new contiguous CPU tensor.
 * On success *out receives a new reference (owned by the innermost open scope,
 * if any, like every tensor-returning tapegrad function) and TG_OK is
 * returned. On failure *out is set to NULL, nothing is leaked, and the status
 * is returned: TG_ERR_NULL (path or out NULL), TG_ERR_IO (cannot open or
 * read: the message has strerror's text; malformed file: the message says
 * what is wrong), TG_ERR_NOMEM. */
tg_status tgcli_npy_load(const char *path, tg_tensor **out);

/* Writes t (f32, f64, i64, bool or bf16 as '<V2', any strides and offset) to path as a .npy file
 * in C order, replacing the file if it exists. The file is written to a
 * temporary name in path's directory and renamed onto path only when every
 * write and the close succeeded (cli_file_* in cli/common.h): on failure
 * nothing is left behind and an earlier file at path is kept as it was (a
 * device or pipe given as path is written in place). Errors: TG_ERR_NULL
 * (path or t NULL; a NULL t keeps an error already recorded), TG_ERR_DTYPE
 * (dtype unknown), TG_ERR_IO (cannot create or write the file: the message
 * names it and has strerror's text), TG_ERR_NOMEM (copying a non-CPU
 * tensor). */
tg_status tgcli_npy_save(const char *path, const tg_tensor *t);

/* Writes t's .npy file (as tgcli_npy_save) to the stream f; path (may be
 * NULL) names it in messages. Write errors are not checked here: they stay in
 * f's error flag for the caller's close (cli_file_commit). Errors:
 * TG_ERR_NULL, TG_ERR_DTYPE, TG_ERR_IO (not little-endian), TG_ERR_NOMEM. */
tg_status tgcli_npy_write(FILE *f, const char *path, const tg_tensor *t);

#endif
