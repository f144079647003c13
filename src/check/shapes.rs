//! Shape rules of the operators: broadcasting and matrix products.

use super::types::Shape;

/// The shape of an elementwise operation on `a` and `b`: equal shapes, or a scalar on
/// either side (`ints[n]` and `vector[n]` combine to `vector[n]`).
pub fn broadcast(a: Shape, b: Shape) -> Option<Shape> {
    use Shape::*;
    match (a, b) {
        (Int, Int) => Some(Int),
        (x, y) if x.is_scalar() && y.is_scalar() => Some(Real),
        (x, s) | (s, x) if s.is_scalar() => Some(if s == Int && matches!(x, Ints(_)) {
            x
        } else {
            x.to_real()
        }),
        (Ints(n), Ints(m)) if n == m => Some(Ints(n)),
        (RowVector(n), RowVector(m)) if n == m => Some(RowVector(n)),
        // `v'` is a 1×n matrix, which is what a row vector is
        (RowVector(n), Matrix(1, m)) | (Matrix(1, m), RowVector(n)) if n == m => Some(RowVector(n)),
        (Vector(n) | Ints(n), Vector(m) | Ints(m)) if n == m => Some(Vector(n)),
        (Matrix(r, c), Matrix(r2, c2)) if r == r2 && c == c2 => Some(Matrix(r, c)),
        _ => None,
    }
}

/// The shape of the matrix product `a * b` (neither a scalar), if defined, with Stan's
/// row-vector algebra: row_vector × vector is a real, vector × row_vector a matrix,
/// row_vector × matrix a row_vector. `left_is_transposed_vector` makes `v' * w` a real too.
pub fn matmul(a: Shape, b: Shape, left_is_transposed_vector: bool) -> Option<Shape> {
    use Shape::*;
    let a = a.to_real();
    let b = b.to_real();
    match (a, b) {
        (Matrix(1, k), Vector(k2)) if k == k2 && left_is_transposed_vector => Some(Real),
        (Matrix(r, k), Matrix(k2, c)) if k == k2 => Some(Matrix(r, c)),
        (Matrix(r, k), Vector(k2)) if k == k2 => Some(Vector(r)),
        (Vector(n), Matrix(1, c)) => Some(Matrix(n, c)),
        (RowVector(k), Vector(k2)) if k == k2 => Some(Real),
        (Vector(n), RowVector(c)) => Some(Matrix(n, c)),
        (RowVector(k), Matrix(k2, c)) if k == k2 => Some(RowVector(c)),
        (Matrix(r, 1), RowVector(c)) => Some(Matrix(r, c)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_broadcast_over_containers() {
        assert_eq!(broadcast(Shape::Real, Shape::Vector(3)), Some(Shape::Vector(3)));
        assert_eq!(broadcast(Shape::Int, Shape::Ints(3)), Some(Shape::Ints(3)));
        assert_eq!(broadcast(Shape::Vector(2), Shape::Vector(3)), None);
    }

    #[test]
    fn matrix_products_follow_inner_dimensions() {
        assert_eq!(
            matmul(Shape::Matrix(4, 3), Shape::Vector(3), false),
            Some(Shape::Vector(4))
        );
        assert_eq!(matmul(Shape::Matrix(4, 3), Shape::Matrix(4, 3), false), None);
        assert_eq!(
            matmul(Shape::Matrix(1, 3), Shape::Vector(3), true),
            Some(Shape::Real)
        );
        assert_eq!(matmul(Shape::Vector(3), Shape::Vector(3), false), None);
    }

    #[test]
    fn row_vectors_follow_stans_algebra() {
        use Shape::*;
        assert_eq!(matmul(RowVector(3), Vector(3), false), Some(Real));
        assert_eq!(matmul(Vector(2), RowVector(3), false), Some(Matrix(2, 3)));
        assert_eq!(matmul(RowVector(3), Matrix(3, 4), false), Some(RowVector(4)));
        assert_eq!(matmul(Matrix(4, 3), RowVector(3), false), None);
        assert_eq!(matmul(RowVector(3), RowVector(3), false), None);
        assert_eq!(broadcast(RowVector(3), RowVector(3)), Some(RowVector(3)));
        assert_eq!(broadcast(RowVector(3), Vector(3)), None);
        assert_eq!(broadcast(Matrix(1, 3), RowVector(3)), Some(RowVector(3)));
        assert_eq!(broadcast(Real, RowVector(3)), Some(RowVector(3)));
    }
}
