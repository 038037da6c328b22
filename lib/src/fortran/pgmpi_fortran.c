/* Fortran (mpif.h / use mpi) entry points for the collectives of collectives.def (checked at the end).
 *
 * Open MPI 4: libmpi_mpifh's mpi_allreduce_ calls PMPI_Allreduce and its mpi_init_ calls PMPI_Init
 * (checked with nm), so a C-only PMPI wrapper never sees Fortran programs. We export our own Fortran
 * entry points for the collectives and for MPI_INIT / MPI_INIT_THREAD / MPI_FINALIZE.
 * MPICH 4: libmpichfort calls the C MPI_* functions, so the C wrappers would catch Fortran calls --
 * but only if libpgmpitune is loaded: with the linker's --as-needed (Debian's default) a Fortran
 * program linked with -lpgmpitune references none of our symbols and the library is dropped. So we
 * export the collectives here too (the program's references then bind to us); MPI_INIT/FINALIZE stay
 * MPICH's (they call our C MPI_Init / MPI_Finalize).
 *
 * Each wrapper converts the handles with MPI_*_f2c, maps the Fortran sentinels MPI_IN_PLACE and
 * MPI_BOTTOM to the C ones -- a sentinel address is never passed on as data -- and calls our C entry
 * point, which dispatches exactly as for C callers. Sentinels: Open MPI's are the common blocks
 * mpi_fortran_in_place_ / mpi_fortran_bottom_ of libmpi; MPICH records their addresses in
 * MPIR_F_MPI_IN_PLACE / MPIR_F_MPI_BOTTOM when mpirinitf_() has run (MPIR_F_NeedInit == 0), which we
 * ensure as MPICH's own bindings do. Every Fortran name mangling is exported (lower_, lower__, lower,
 * UPPER). Built for Open MPI and MPICH only; other MPIs get a clear #error.
 *
 * `use mpi_f08` (the specific procedures mpi_<name>_f08_; ierror is OPTIONAL, so a NULL pointer when
 * absent; handles are TYPE(MPI_Comm) etc., one default INTEGER passed by reference like mpif.h's):
 * both libraries' MPI_INIT / MPI_INIT_THREAD / MPI_FINALIZE reach PMPI_Init / PMPI_Finalize (checked
 * with nm), so we export those three for both. Open MPI's f08 collectives call PMPI_* too, and take
 * buffers as plain addresses (assumed-size, no argument check) -- we export them like the mpif.h ones.
 * MPICH's f08 collectives (mpi_<name>_f08ts_, buffers as C descriptors) call the C MPI_* functions, which
 * are ours once the exported MPI_INIT above has pulled libpgmpitune into the program. */
#include <mpi.h>
#include <stddef.h>

#if defined(OPEN_MPI)
extern int mpi_fortran_in_place_;
extern int mpi_fortran_bottom_;

static inline void *fbuf(void *b)
{
    if (b == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (b == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    return b;
}
#define FSETUP() ((void)0)
#elif defined(MPICH)
extern void *MPIR_F_MPI_IN_PLACE;
extern void *MPIR_F_MPI_BOTTOM;
extern int MPIR_F_NeedInit;
extern void mpirinitf_(void);

static inline void *fbuf(void *b)
{
    if (b == MPIR_F_MPI_IN_PLACE) return MPI_IN_PLACE;
    if (b == MPIR_F_MPI_BOTTOM) return MPI_BOTTOM;
    return b;
}
#define FSETUP() do { if (MPIR_F_NeedInit) { mpirinitf_(); MPIR_F_NeedInit = 0; } } while (0)
#else
#error "pgmpi_fortran.c knows the Fortran sentinels of Open MPI and MPICH only"
#endif

/* ierror of the f08 procedures is OPTIONAL */
#define F08RET(ierr, rc) do { int rc_ = (rc); if (ierr) *(ierr) = (MPI_Fint)rc_; } while (0)

#define FNAMES(lower, upper, proto)                                                  \
    void lower##__ proto __attribute__((alias(#lower "_")));                         \
    void lower proto __attribute__((alias(#lower "_")));                             \
    void upper proto __attribute__((alias(#lower "_")));

#if defined(OPEN_MPI)
#define P_INIT (MPI_Fint *ierr)
void mpi_init_ P_INIT
{
    *ierr = (MPI_Fint)MPI_Init(NULL, NULL);
}
FNAMES(mpi_init, MPI_INIT, P_INIT)

#define P_INIT_THREAD (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
void mpi_init_thread_ P_INIT_THREAD
{
    int prov = MPI_THREAD_SINGLE;
    *ierr = (MPI_Fint)MPI_Init_thread(NULL, NULL, (int)*required, &prov);
    *provided = (MPI_Fint)prov;
}
FNAMES(mpi_init_thread, MPI_INIT_THREAD, P_INIT_THREAD)

#define P_FINALIZE (MPI_Fint *ierr)
void mpi_finalize_ P_FINALIZE
{
    *ierr = (MPI_Fint)MPI_Finalize();
}
FNAMES(mpi_finalize, MPI_FINALIZE, P_FINALIZE)

#endif

void mpi_init_f08_(MPI_Fint *ierr)
{
    F08RET(ierr, MPI_Init(NULL, NULL));
}

void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int prov = MPI_THREAD_SINGLE;
    F08RET(ierr, MPI_Init_thread(NULL, NULL, (int)*required, &prov));
    *provided = (MPI_Fint)prov;
}

void mpi_finalize_f08_(MPI_Fint *ierr)
{
    F08RET(ierr, MPI_Finalize());
}

/* One collective's entry points: mpi_<name>_ and its manglings (mpif.h, use mpi) and, with Open MPI, the
 * f08 procedure mpi_<name>_f08_ -- all one C call. PGMPI_FORTRAN_HAS_<ID> is what the check at the end
 * of this file looks for. */
#if defined(OPEN_MPI)
#define F08(lower, proto, call) void lower##_f08_ proto { F08RET(ierr, call); }
#else
#define F08(lower, proto, call)
#endif
#define FCOLL(ID, lower, upper, proto, call)                                         \
    void lower##_ proto                                                              \
    {                                                                                \
        FSETUP();                                                                    \
        *ierr = (MPI_Fint)(call);                                                    \
    }                                                                                \
    FNAMES(lower, upper, proto)                                                      \
    F08(lower, proto, call)                                                          \
    enum { PGMPI_FORTRAN_HAS_##ID = 1 };

#define P_ALLGATHER (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr)
FCOLL(ALLGATHER, mpi_allgather, MPI_ALLGATHER, P_ALLGATHER,
      MPI_Allgather(fbuf(sb), (int)*sc, MPI_Type_f2c(*st), fbuf(rb), (int)*rc, MPI_Type_f2c(*rt), MPI_Comm_f2c(*comm)))

#define P_ALLREDUCE (void *sb, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
FCOLL(ALLREDUCE, mpi_allreduce, MPI_ALLREDUCE, P_ALLREDUCE,
      MPI_Allreduce(fbuf(sb), fbuf(rb), (int)*count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm)))

FCOLL(ALLTOALL, mpi_alltoall, MPI_ALLTOALL, P_ALLGATHER,
      MPI_Alltoall(fbuf(sb), (int)*sc, MPI_Type_f2c(*st), fbuf(rb), (int)*rc, MPI_Type_f2c(*rt), MPI_Comm_f2c(*comm)))

#define P_BCAST (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
FCOLL(BCAST, mpi_bcast, MPI_BCAST, P_BCAST,
      MPI_Bcast(fbuf(buf), (int)*count, MPI_Type_f2c(*dt), (int)*root, MPI_Comm_f2c(*comm)))

#define P_GATHER (void *sb, MPI_Fint *sc, MPI_Fint *st, void *rb, MPI_Fint *rc, MPI_Fint *rt, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
FCOLL(GATHER, mpi_gather, MPI_GATHER, P_GATHER,
      MPI_Gather(fbuf(sb), (int)*sc, MPI_Type_f2c(*st), fbuf(rb), (int)*rc, MPI_Type_f2c(*rt), (int)*root,
                 MPI_Comm_f2c(*comm)))

#define P_REDUCE (void *sb, void *rb, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
FCOLL(REDUCE, mpi_reduce, MPI_REDUCE, P_REDUCE,
      MPI_Reduce(fbuf(sb), fbuf(rb), (int)*count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), (int)*root, MPI_Comm_f2c(*comm)))

FCOLL(REDUCE_SCATTER_BLOCK, mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, P_ALLREDUCE,
      MPI_Reduce_scatter_block(fbuf(sb), fbuf(rb), (int)*count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op),
                               MPI_Comm_f2c(*comm)))

/* MPI_Fint is int with Open MPI's default Fortran integer; the counts are passed through. */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint must be int for MPI_REDUCE_SCATTER counts");
#define P_RS (void *sb, void *rb, MPI_Fint *rcs, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
FCOLL(REDUCE_SCATTER, mpi_reduce_scatter, MPI_REDUCE_SCATTER, P_RS,
      MPI_Reduce_scatter(fbuf(sb), fbuf(rb), (const int *)rcs, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm)))

FCOLL(SCAN, mpi_scan, MPI_SCAN, P_ALLREDUCE,
      MPI_Scan(fbuf(sb), fbuf(rb), (int)*count, MPI_Type_f2c(*dt), MPI_Op_f2c(*op), MPI_Comm_f2c(*comm)))

FCOLL(SCATTER, mpi_scatter, MPI_SCATTER, P_GATHER,
      MPI_Scatter(fbuf(sb), (int)*sc, MPI_Type_f2c(*st), fbuf(rb), (int)*rc, MPI_Type_f2c(*rt), (int)*root,
                  MPI_Comm_f2c(*comm)))

/* Every collective the library dispatches has its Fortran entry points: a row of collectives.def without
 * an FCOLL above stops the build here (PGMPI_FORTRAN_HAS_<ID> undeclared). */
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) \
    _Static_assert(PGMPI_FORTRAN_HAS_##ID, "no Fortran entry points for " mpi_name " in pgmpi_fortran.c");
#include "collectives.def"
#undef PGMPI_COLLECTIVE
