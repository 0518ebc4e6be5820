__global__ void a() {
  __syncwarp(0);
}
int main() {
  a<<<1, 1>>>();
}
