/*
 * errno.c - the one place a jf_err becomes an errno.
 */
#include <errno.h>

#include "fs/fs_int.h"

int jf_errno(enum jf_err e)
{
	switch (e) {
	case JF_OK:
		return 0;
	case JF_EINVAL:
		return EINVAL;
	case JF_ENOENT:
		return ENOENT;
	case JF_EEXIST:
		return EEXIST;
	case JF_EBUSY:
		return EBUSY;
	case JF_EROFS:
		/* an accepted spec: EROFS would read as if the whole mount were */
		return EACCES;
	case JF_EACCES:
		return EACCES;
	case JF_ENOMEM:
		return ENOMEM;
	case JF_EIO:
		return EIO;
	case JF_EFBIG:
		return EFBIG;
	case JF_ENOTEMPTY:
		return ENOTEMPTY;
	case JF_ENOTSUP:
		return EINVAL;
	}
	return EIO;
}
