# SciPy's special-function kernels for the rule table's scipy.special entries
# (cyad/_rules/special_kernels.pyx says how they are reached). Each returns what the scipy.special
# ufunc of its name returns at a double (yn, kn and expn truncate their order n toward zero).

cdef double erf(double x) noexcept nogil
cdef double erfc(double x) noexcept nogil
cdef double erfinv(double x) noexcept nogil
cdef double erfcx(double x) noexcept nogil
cdef double ndtr(double x) noexcept nogil
cdef double log_ndtr(double x) noexcept nogil
cdef double ndtri(double x) noexcept nogil
cdef double expit(double x) noexcept nogil
cdef double logit(double x) noexcept nogil
cdef double log_expit(double x) noexcept nogil
cdef double gammaln(double x) noexcept nogil
cdef double gamma(double x) noexcept nogil
cdef double loggamma(double x) noexcept nogil
cdef double psi(double x) noexcept nogil
cdef double entr(double x) noexcept nogil
cdef double i0(double x) noexcept nogil
cdef double i0e(double x) noexcept nogil
cdef double i1(double x) noexcept nogil
cdef double i1e(double x) noexcept nogil
cdef double j0(double x) noexcept nogil
cdef double j1(double x) noexcept nogil
cdef double betaln(double a, double b) noexcept nogil
cdef double beta(double a, double b) noexcept nogil
cdef double xlogy(double x, double y) noexcept nogil
cdef double xlog1py(double x, double y) noexcept nogil
cdef double rel_entr(double x, double y) noexcept nogil
cdef double kl_div(double x, double y) noexcept nogil
cdef double iv(double v, double x) noexcept nogil
cdef double ive(double v, double x) noexcept nogil
cdef double jv(double v, double x) noexcept nogil
cdef double gammainc(double a, double x) noexcept nogil
cdef double gammaincc(double a, double x) noexcept nogil
cdef double boxcox(double x, double lmbda) noexcept nogil
cdef double boxcox1p(double x, double lmbda) noexcept nogil
cdef double k0(double x) noexcept nogil
cdef double k1(double x) noexcept nogil
cdef double k0e(double x) noexcept nogil
cdef double k1e(double x) noexcept nogil
cdef double y0(double x) noexcept nogil
cdef double y1(double x) noexcept nogil
cdef double gammasgn(double x) noexcept nogil
cdef double rgamma(double x) noexcept nogil
cdef double erfcinv(double x) noexcept nogil
cdef double dawsn(double x) noexcept nogil
cdef double exp1(double x) noexcept nogil
cdef double expi(double x) noexcept nogil
cdef double spence(double x) noexcept nogil
cdef double ellipk(double m) noexcept nogil
cdef double ellipe(double m) noexcept nogil
cdef double jve(double v, double x) noexcept nogil
cdef double yv(double v, double x) noexcept nogil
cdef double yve(double v, double x) noexcept nogil
cdef double kv(double v, double x) noexcept nogil
cdef double kve(double v, double x) noexcept nogil
cdef double ellipkinc(double phi, double m) noexcept nogil
cdef double ellipeinc(double phi, double m) noexcept nogil
cdef double struve(double v, double x) noexcept nogil
cdef double modstruve(double v, double x) noexcept nogil
cdef double yn(double n, double x) noexcept nogil
cdef double kn(double n, double x) noexcept nogil
cdef double expn(double n, double x) noexcept nogil
cdef double elliprd(double x, double y, double z) noexcept nogil
cdef double hyp2f1(double a, double b, double c, double z) noexcept nogil
cdef double zeta(double s, double q) noexcept nogil
cdef double polygamma(int n, double x) noexcept nogil
# the spherical Bessel functions j_n, y_n, i_n and k_n of an integer order n (truncated toward
# zero) at a real x, or their derivatives, as scipy.special.spherical_jn, ... compute them
cdef double spherical_jn(double n, double x, bint derivative=*) noexcept nogil
cdef double spherical_yn(double n, double x, bint derivative=*) noexcept nogil
cdef double spherical_in(double n, double x, bint derivative=*) noexcept nogil
cdef double spherical_kn(double n, double x, bint derivative=*) noexcept nogil
# the partials in m of ellipkinc's F(phi|m) and ellipeinc's E(phi|m), first and second
cdef double ellipkinc_dm(double phi, double m) noexcept nogil
cdef double ellipeinc_dm(double phi, double m) noexcept nogil
cdef double ellipkinc_dmm(double phi, double m) noexcept nogil
cdef double ellipeinc_dmm(double phi, double m) noexcept nogil
