! Fortran (use mpi) program: tuned collectives must be reached from Fortran, results checked,
! MPI_IN_PLACE passed through as the sentinel (never as data).
program fortran_usempi
  use mpi
  implicit none

  integer :: ierr, rank, nprocs, i, errs, total
  integer :: a(10), b(10), g(80)
  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  do i = 1, 10
    a(i) = rank + i
  end do
  call MPI_ALLREDUCE(a, b, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 10
    if (b(i) /= nprocs * i + nprocs * (nprocs - 1) / 2) errs = errs + 1
  end do
  do i = 1, 10
    b(i) = rank + i
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, b, 10, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, 10
    if (b(i) /= nprocs - 1 + i) errs = errs + 1
  end do
  if (rank == 0) then
    a = 42
  else
    a = -1
  end if
  call MPI_BCAST(a, 10, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(a /= 42)) errs = errs + 1
  a(1) = rank
  call MPI_GATHER(a, 1, MPI_INTEGER, g, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, nprocs
      if (g(i) /= i - 1) errs = errs + 1
    end do
  end if
  call MPI_REDUCE(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', 'fortran_usempi: OK'
    else
      print '(a,i0,a)', 'fortran_usempi: FAILED (', total, ' errors)'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program fortran_usempi
