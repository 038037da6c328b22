! Fortran 2008 (use mpi_f08) program: all ten tuned collectives reached from f08, results checked,
! MPI_IN_PLACE passed as the sentinel, ierror both given and omitted (OPTIONAL in mpi_f08).
program fortran_usempif08
  use mpi_f08
  implicit none

  integer :: ierr, rank, nprocs, i, j, errs, total
  integer :: a(10), b(10)
  integer, allocatable :: big(:), bigr(:), counts(:)
  errs = 0
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  allocate(big(10 * nprocs), bigr(10 * nprocs), counts(nprocs))

  ! Allreduce, then in place
  do i = 1, 10
    a(i) = rank + i
  end do
  call MPI_Allreduce(a, b, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 10
    if (b(i) /= nprocs * i + nprocs * (nprocs - 1) / 2) errs = errs + 1
  end do
  b = a
  call MPI_Allreduce(MPI_IN_PLACE, b, 10, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  do i = 1, 10
    if (b(i) /= nprocs - 1 + i) errs = errs + 1
  end do

  ! Bcast from the last rank
  a = -1
  if (rank == nprocs - 1) a = 42
  call MPI_Bcast(a, 10, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD)
  if (any(a /= 42)) errs = errs + 1

  ! Allgather, Gather, Scatter, Alltoall: 10 integers per rank
  do i = 1, 10
    a(i) = 100 * rank + i
  end do
  call MPI_Allgather(a, 10, MPI_INTEGER, big, 10, MPI_INTEGER, MPI_COMM_WORLD)
  do j = 0, nprocs - 1
    do i = 1, 10
      if (big(10 * j + i) /= 100 * j + i) errs = errs + 1
    end do
  end do
  big = -1
  call MPI_Gather(a, 10, MPI_INTEGER, big, 10, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    do j = 0, nprocs - 1
      do i = 1, 10
        if (big(10 * j + i) /= 100 * j + i) errs = errs + 1
      end do
    end do
  end if
  if (rank == 0) then
    do i = 1, 10 * nprocs
      big(i) = 7 * i
    end do
  end if
  call MPI_Scatter(big, 10, MPI_INTEGER, b, 10, MPI_INTEGER, 0, MPI_COMM_WORLD)
  do i = 1, 10
    if (b(i) /= 7 * (10 * rank + i)) errs = errs + 1
  end do
  do i = 1, 10 * nprocs
    big(i) = 1000 * rank + i
  end do
  call MPI_Alltoall(big, 10, MPI_INTEGER, bigr, 10, MPI_INTEGER, MPI_COMM_WORLD)
  do j = 0, nprocs - 1
    do i = 1, 10
      if (bigr(10 * j + i) /= 1000 * j + 10 * rank + i) errs = errs + 1
    end do
  end do

  ! Reduce to the last rank, Scan
  do i = 1, 10
    a(i) = rank + i
  end do
  b = 0
  call MPI_Reduce(a, b, 10, MPI_INTEGER, MPI_SUM, nprocs - 1, MPI_COMM_WORLD)
  if (rank == nprocs - 1) then
    do i = 1, 10
      if (b(i) /= nprocs * i + nprocs * (nprocs - 1) / 2) errs = errs + 1
    end do
  end if
  call MPI_Scan(a, b, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, 10
    if (b(i) /= (rank + 1) * i + rank * (rank + 1) / 2) errs = errs + 1
  end do

  ! Reduce_scatter_block and Reduce_scatter: 10 results per rank
  do i = 1, 10 * nprocs
    big(i) = i + rank
  end do
  call MPI_Reduce_scatter_block(big, b, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, 10
    if (b(i) /= nprocs * (10 * rank + i) + nprocs * (nprocs - 1) / 2) errs = errs + 1
  end do
  counts = 10
  b = 0
  call MPI_Reduce_scatter(big, b, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, 10
    if (b(i) /= nprocs * (10 * rank + i) + nprocs * (nprocs - 1) / 2) errs = errs + 1
  end do

  call MPI_Reduce(errs, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', 'fortran_usempif08: OK'
    else
      print '(a,i0,a)', 'fortran_usempif08: FAILED (', total, ' errors)'
    end if
  end if
  call MPI_Finalize(ierr)
end program fortran_usempif08
