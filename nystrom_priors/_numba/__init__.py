"""Private jitted kernels. Importing this package imports numba; nothing else in the package
imports it at module level, so ``import nystrom_priors`` stays light."""
